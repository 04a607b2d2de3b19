//! `docs/LowpPasses.md`, generated from the registry: every pass with its module header
//! (what it rewrites into what), anchor op and options, then the named pipelines with their
//! pass lists. `tests/integration/docs.rs` checks the committed file is current.

use crate::pipelines;
use crate::registry::{all_passes, OptionKind, PassDef};

/// The `//!` header of a pass module, as Markdown.
fn header(source: &str) -> String {
    let mut out = String::new();
    for line in source.lines() {
        let Some(rest) = line.strip_prefix("//!") else {
            break;
        };
        out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        out.push('\n');
    }
    out
}

fn source_of(pass: &PassDef) -> &'static str {
    match pass.argument {
        "lowp-assert-shapes" => include_str!("assert_shapes.rs"),
        "lowp-expand-quantize" => include_str!("expand_quantize.rs"),
        "lowp-to-loops" => include_str!("to_loops.rs"),
        "lowp-to-parallel-loops" => include_str!("to_parallel_loops.rs"),
        "lowp-to-nvvm" => include_str!("to_nvvm/mod.rs"),
        "lowp-to-rocdl" => include_str!("to_rocdl/mod.rs"),
        "lowp-lower-storage" => include_str!("lower_storage.rs"),
        "lowp-extern-dynamic-shared" => include_str!("extern_dynamic_shared.rs"),
        "lowp-kernel-cluster-size" => include_str!("kernel_cluster_size.rs"),
        "lowp-fold-grid" => include_str!("fold_grid.rs"),
        "lowp-legalize-ptx-names" => include_str!("legalize_ptx_names.rs"),
        "lowp-check-allocations" => include_str!("check_allocations.rs"),
        "lowp-report-asserts" => include_str!("report_asserts.rs"),
        "lowp-check-bounds" => include_str!("check_bounds.rs"),
        _ => "",
    }
}

fn accepted(kind: OptionKind) -> String {
    match kind {
        OptionKind::Bool => "true, false".into(),
        OptionKind::Choice(words) => words.join(", "),
        OptionKind::UInt { min, max } => format!("{min} ..= {max}"),
    }
}

/// The whole document.
pub fn markdown() -> String {
    let mut s = String::from(
        "<!-- Generated from crates/lowp-passes (registry, module headers, pipelines) by \
         `bash scripts/gen-docs.sh`; do not edit. -->\n\n# lowp passes\n\n\
         Every pass runs in `lowp-opt` (`--<argument>` or inside `--pass-pipeline=...`) and \
         in lowp-jit's pipelines.\n",
    );
    for pass in all_passes() {
        s.push_str(&format!("\n## `-{}` ({})\n\n", pass.argument, pass.name));
        s.push_str(&format!(
            "{}. Runs on `{}`.\n\n",
            pass.description.trim_end_matches('.'),
            pass.op_name.unwrap_or("any op")
        ));
        let h = header(source_of(pass));
        // The first header line repeats the argument; the rest is the rewrite.
        let body = h.split_once('\n').map(|(_, rest)| rest).unwrap_or("");
        if !h.is_empty() {
            s.push_str(h.lines().next().unwrap_or(""));
            s.push('\n');
            s.push_str(body);
        }
        if !pass.options.is_empty() {
            s.push_str("\n| option | default | accepts | meaning |\n|---|---|---|---|\n");
            for o in pass.options {
                s.push_str(&format!(
                    "| `{}` | `{}` | {} | {} |\n",
                    o.name,
                    o.default,
                    accepted(o.kind),
                    o.description
                ));
            }
        }
    }
    s.push_str("\n# Pipelines\n");
    for p in pipelines::ALL {
        s.push_str(&format!(
            "\n## `-{}`\n\n{}.\n\n```\n{}\n```\n",
            p.argument,
            p.description.trim_end_matches('.'),
            p.text()
        ));
    }
    s.push_str(&format!(
        "\nAfter `-lowp-gpu-generic-pipeline`, NVIDIA targets run (sm_90a shown; lowp-jit takes \
         the chip's PTX ISA from `lowp_passes::chip::Chip`):\n\n```\n{}\n```\n",
        pipelines::nvvm_kernel_passes("sm_90a", "+ptx84")
    ));
    s.push_str(&format!(
        "\nand AMD targets (gfx942 shown):\n\n```\n{}\n```\n\n`lowp-translate --emit=ptx|asm \
         --chip=...` runs these on any module holding `gpu.module` kernels and prints each \
         kernel's PTX or ISA.\n",
        pipelines::rocdl_kernel_passes("gfx942")
    ));
    s.push_str(&format!(
        "\nThe NVIDIA path proper (`lowp-translate` and `lowp-run --target cuda` run it for \
         the chip; sm_90a, kernel auto shown), before the NVVM passes above:\n\n```\n{}\n```\n",
        pipelines::nvvm_front("sm_90a", "auto")
    ));
    s.push_str(&format!(
        "\nand the AMD path (gfx950 shown), before the ROCDL passes:\n\n```\n{}\n```\n",
        pipelines::rocdl_front("gfx950", "auto")
    ));
    s
}
