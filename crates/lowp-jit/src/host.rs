//! What the host CPU has, and what it lacks for a module's target intrinsics.
//!
//! The JIT compiles for the host's own features. A call of an x86 intrinsic from an
//! extension the host does not have (`llvm.x86.avx512.pmaddubs.w.512` from
//! `lowp-to-loops{lanes=16 dot=i8}` on an AVX2 machine, or a hand-written
//! `llvm.call_intrinsic`) reaches LLVM's instruction selection, which cannot select it and
//! stops the whole process (`report_fatal_error`): a tool can only print that and exit, a
//! library user gets an abort. [`emit_missing_extension`] finds such a call first and reports
//! it at its location.
//!
//! The extension an intrinsic needs is read from its LLVM name, `llvm.x86.<family>.<op>`,
//! by the family (and, for AVX-512, the element width and vector length the op names);
//! families outside the table pass unchecked.

use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::Module;

/// The x86 families outside AVX-512 by the start of their intrinsics' names (after
/// `llvm.x86.`), and the extension each needs; the first match counts (`avx2.` before
/// `avx.`, `bmi.bextr` before `bmi.`).
const FAMILIES: [(&str, &str); 17] = [
    ("avxvnni.", "avxvnni"),
    ("avx2.", "avx2"),
    ("fma.", "fma"),
    ("avx.", "avx"),
    ("vcvtph2ps", "f16c"),
    ("vcvtps2ph", "f16c"),
    ("sse42.", "sse4.2"),
    ("crc32.", "sse4.2"),
    ("sse41.", "sse4.1"),
    ("ssse3.", "ssse3"),
    ("sse3.", "sse3"),
    ("aesni.", "aes"),
    ("pclmulqdq", "pclmulqdq"),
    ("sha1", "sha"),
    ("sha256", "sha"),
    ("bmi.bextr", "bmi1"),
    ("bmi.", "bmi2"),
];

/// The CPU extensions (as `is_x86_feature_detected!` spells them) the x86 intrinsic
/// `name` needs; empty for a name outside `llvm.x86.` or a family the table lacks.
pub fn x86_intrinsic_needs(name: &str) -> Vec<&'static str> {
    let Some(op) = name.strip_prefix("llvm.x86.") else {
        return Vec::new();
    };
    if let Some(rest) = op.strip_prefix("avx512") {
        // avx512bf16.*, avx512fp16.*, or the AVX512F family avx512.* whose byte / word
        // ops are AVX512BW's, dot products AVX512VNNI's, and 128 / 256-bit forms AVX512VL's.
        let mut needs = vec!["avx512f"];
        if rest.starts_with("bf16.") {
            needs.push("avx512bf16");
        } else if rest.starts_with("fp16.") {
            needs.extend(["avx512bw", "avx512fp16"]);
        } else {
            const BYTE_WORD: [&str; 15] = [
                "pmaddubs.w",
                "pmaddw.d",
                "psad.bw",
                "dbpsadbw",
                "packss",
                "packus",
                "pshuf.b",
                "pmulhu.w",
                "pmulh.w",
                "pmul.hr.sw",
                "permvar.hi",
                "permvar.qi",
                "vpermi2var.hi",
                ".w.",
                ".b.",
            ];
            const DOT: [&str; 4] = ["vpdpbusd", "vpdpbusds", "vpdpwssd", "vpdpwssds"];
            if BYTE_WORD.iter().any(|m| rest.contains(m)) {
                needs.push("avx512bw");
            }
            if DOT.iter().any(|m| rest.contains(m)) {
                needs.push("avx512vnni");
            }
        }
        if rest.ends_with(".128") || rest.ends_with(".256") {
            needs.push("avx512vl");
        }
        return needs;
    }
    FAMILIES
        .iter()
        .find(|(prefix, _)| op.starts_with(prefix))
        .map(|&(_, extension)| vec![extension])
        .unwrap_or_default()
}

/// Whether this CPU has the x86 extension `feature` (a name [`x86_intrinsic_needs`]
/// returns); false on other CPUs. The one place lowp-jit asks the CPU (`host_lanes`,
/// `host_byte_dot`, `host_f16` and the intrinsic check).
pub(crate) fn host_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        match feature {
            "avx512f" => has!("avx512f"),
            "avx512bw" => has!("avx512bw"),
            "avx512vl" => has!("avx512vl"),
            "avx512vnni" => has!("avx512vnni"),
            "avx512bf16" => has!("avx512bf16"),
            "avx512fp16" => has!("avx512fp16"),
            "avxvnni" => has!("avxvnni"),
            "avx2" => has!("avx2"),
            "fma" => has!("fma"),
            "avx" => has!("avx"),
            "f16c" => has!("f16c"),
            "sse4.2" => has!("sse4.2"),
            "sse4.1" => has!("sse4.1"),
            "ssse3" => has!("ssse3"),
            "sse3" => has!("sse3"),
            "aes" => has!("aes"),
            "pclmulqdq" => has!("pclmulqdq"),
            "sha" => has!("sha"),
            "bmi1" => has!("bmi1"),
            "bmi2" => has!("bmi2"),
            _ => true,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

/// The name of the intrinsic `op` calls: `llvm.call_intrinsic "name"`, or `llvm.call` of
/// a function named `llvm.*` (which LLVM IR reads as the intrinsic).
fn intrinsic_called(op: melior::ir::OperationRef) -> Option<String> {
    let name = op.name();
    match name.as_string_ref().as_str().ok()? {
        "llvm.call_intrinsic" => op
            .attribute("intrin")
            .ok()
            .and_then(lowp_passes::ir::string_value),
        "llvm.call" => op
            .attribute("callee")
            .ok()
            .and_then(lowp_passes::ir::symbol_path)
            .map(|(_, leaf)| leaf)
            .filter(|n| n.starts_with("llvm.")),
        _ => None,
    }
}

/// The first call of an x86 intrinsic whose extension this CPU lacks, as an error at its
/// location naming the extensions; `None` where every call can be compiled here.
pub(crate) fn emit_missing_extension(module: &Module) -> Option<()> {
    let mut found = None;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let Some(name) = intrinsic_called(op) else {
            return WalkResult::Advance;
        };
        if !name.starts_with("llvm.x86.") {
            return WalkResult::Advance;
        }
        let lacking: Vec<&str> = if cfg!(target_arch = "x86_64") {
            x86_intrinsic_needs(&name)
                .into_iter()
                .filter(|f| !host_has(f))
                .collect()
        } else {
            vec!["an x86 CPU"]
        };
        if lacking.is_empty() {
            return WalkResult::Advance;
        }
        found = Some((op.location().to_raw(), name, lacking.join(", ")));
        WalkResult::Interrupt
    });
    let (location, name, lacking) = found?;
    lowp_passes::ir::emit_error(
        location,
        &format!(
            "'{name}' needs {lacking}, which this CPU lacks: the JIT compiles for this CPU \
             and LLVM cannot select the intrinsic here (a lowp-to-loops kernel: choose lanes \
             and dot for this CPU, or leave them to lowp-jit's Session)"
        ),
    );
    Some(())
}
