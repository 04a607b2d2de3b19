//! The NVIDIA kernels' compile side (lowp-to-nvvm: the generic kernel, and the FP8 wgmma
//! (sm_90a) and mma.sync kernels where the formats allow), on every named format and scale
//! layout:
//! the launch read from gpu.launch_func covers C, every memref operand is an entry
//! argument, the PTX entry declares exactly the parameters `GpuKernel::launch` passes, and
//! `auto` / `mma-sync` use their instruction exactly where they should (FP8, or f16 for the
//! formats no FP8 type holds), with no local memory. Where a CUDA GPU is
//! present the kernels also run and are checked against the oracle (lit's
//! Run/Cuda/check.test does the same through lowp-run).

use lowp_formats::{ScaleLayout, ScaledFormat};
use lowp_jit::gpu::KernelParam;
use lowp_jit::{MatmulIr, MatmulSpec, Session};

fn specs() -> Vec<MatmulSpec> {
    let layouts = lowp_tests::MATMUL_LAYOUTS;
    let mut out = Vec::new();
    for (i, &f) in ScaledFormat::NAMED.iter().enumerate() {
        for (j, &l) in layouts.iter().enumerate() {
            let spec = MatmulSpec {
                // M at most 64 (the skinny wgmma block) and above (the square one).
                m: if i % 2 == 0 { 13 + i } else { 65 + i },
                n: 40 - j,
                k: 256,
                lhs: f,
                rhs: f,
                lhs_layout: l,
                rhs_layout: l,
                lhs_packed: f.bit_width() == 4 && j % 2 == 0,
                rhs_packed: false,
                bias: j % 2 == 1,
                bf16: i % 3 == 0,
            };
            if spec.validate().is_ok() {
                out.push(spec);
            }
        }
    }
    out
}

/// Formats the mma.sync kernel takes (E4M3 / E5M2, or embedded in them).
fn mma_format(f: ScaledFormat) -> bool {
    matches!(f, ScaledFormat::F8E4M3 | ScaledFormat::F8E5M2)
        || (f.fp8_embedding().is_some() && f.bit_width() <= 6)
}

#[test]
fn kernels_compile_for_every_format_and_layout() {
    let session = Session::new();
    let specs = specs();
    assert!(specs.len() >= 25, "{} specs", specs.len());
    let (mut mma, mut pipelined) = (0, 0);
    for (spec, choice) in specs
        .iter()
        .flat_map(|s| [(s, "generic"), (s, "auto"), (s, "mma-sync")])
    {
        let fp8 = mma_format(spec.lhs) && mma_format(spec.rhs);
        // Formats no FP8 type holds but f16's fields do: the f16 mma.sync form; where f16's
        // exponent field does not hold one (E5M2 FNUZ), both through bf16's: its bf16 form.
        let f16_only = spec.lhs.f16_fields().is_some() && spec.rhs.f16_fields().is_some();
        let bf16 = !fp8
            && !f16_only
            && spec.lhs.bf16_fields().is_some()
            && spec.rhs.bf16_fields().is_some();
        let f16 = (!fp8 && f16_only) || bf16;
        // The wgmma pipeline's f16 route takes them unpacked (K = 256 is whole stages, any
        // scale layout); packed, mma.sync's f16 form.
        let f16_pipeline = f16 && !spec.lhs_packed && !spec.rhs_packed;
        if choice == "mma-sync" && !fp8 && !f16 {
            continue;
        }
        let half = if bf16 { "bf16" } else { "f16" };
        let mut module = spec.build_module(session.context(), "mm");
        // (NVFP4's 16-blocks on the split route, whose shared memory is worked out below;
        // the default takes the f16 route where it applies: lit
        // Conversion/LowpToNVVM/wgmma-pipeline-nvfp4-auto.mlir.)
        let kernel = session
            .compile_nvvm_with(&mut module, "mm", "sm_90a", choice, &[("nvfp4", "split")])
            .unwrap_or_else(|e| panic!("{spec:?} {choice}: {e}"));
        let uses_mma = kernel.ptx.contains("mma.sync.aligned.m16n8k32.row.col.f32")
            || kernel
                .ptx
                .contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
            || kernel
                .ptx
                .contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
        let uses_wgmma = kernel.ptx.contains("wgmma.mma_async.sync.aligned.m64n");
        assert_eq!(
            uses_mma,
            choice == "mma-sync" || (choice == "auto" && f16 && !f16_pipeline),
            "{spec:?} {choice}"
        );
        assert_eq!(
            kernel
                .ptx
                .contains(&format!("m16n8k16.row.col.f32.{half}.{half}.f32")),
            uses_mma && f16,
            "{spec:?} {choice}"
        );
        assert_eq!(
            uses_wgmma,
            choice == "auto" && (fp8 || f16_pipeline),
            "{spec:?} {choice}"
        );

        // Fragments and accumulators stay in registers.
        assert!(
            !kernel.ptx.contains(".local"),
            "{spec:?} {choice}: local memory"
        );
        // Nothing calls out (no libdevice is linked).
        assert!(
            !kernel.ptx.contains(".extern .func"),
            "{spec:?} {choice}: external call"
        );
        mma += (uses_mma || uses_wgmma) as usize;
        let (gx, gy, _) = kernel.grid;
        let (bx, by, _) = kernel.block;
        if uses_mma {
            // 4 warps per block, a 64 x 64 tile of C each (column tiles on x).
            assert_eq!(kernel.block, (128, 1, 1), "{spec:?}");
            assert!(gx as usize * 64 >= spec.n && gy as usize * 64 >= spec.m);
        } else if uses_wgmma && f16 {
            // The pipeline's f16 route: k16 f16 instructions on the fields' f16 patterns,
            // no FP8 one, in dynamic shared memory (the stages of stored rows and the f16
            // tiles; to_nvvm's wgmma_pipeline_f16_patterns_match_the_oracle runs them).
            assert!(
                kernel.ptx.contains(&format!("k16.f32.{half}.{half}"))
                    && !kernel.ptx.contains("k32.f32.e"),
                "{spec:?}"
            );
            assert!(kernel.ptx.contains("cp.async.cg.shared.global"), "{spec:?}");
            assert!(kernel.shared_bytes > 0, "{spec:?}");
        } else if uses_wgmma && kernel.ptx.contains("cp.async.bulk.tensor") {
            // auto's square block where E4M3 / E5M2 are used as stored and no scale changes
            // along K: the pipeline fed by TMA (a producer warpgroup and two consumers), one
            // block per cluster (no multicast by default), a tensor map per operand.
            let stored = |f| matches!(f, ScaledFormat::F8E4M3 | ScaledFormat::F8E5M2);
            let along_k = |l| {
                matches!(
                    l,
                    ScaleLayout::Mx { .. }
                        | ScaleLayout::Nvfp4 { .. }
                        | ScaleLayout::Blockwise { .. }
                )
            };
            assert!(
                choice == "auto"
                    && spec.m > 64
                    && stored(spec.lhs)
                    && stored(spec.rhs)
                    && !along_k(spec.lhs_layout)
                    && !along_k(spec.rhs_layout),
                "{spec:?}"
            );
            assert_eq!(kernel.block, (384, 1, 1), "{spec:?}");
            assert_eq!(kernel.cluster, (1, 1, 1), "{spec:?}");
            assert!(!kernel.ptx.contains("multicast::cluster"), "{spec:?}");
            let maps = (kernel.params.iter())
                .filter(|p| matches!(p, KernelParam::TensorMap { .. }))
                .count();
            assert_eq!(maps, 2, "{spec:?}");
            assert!(gx as usize * 128 >= spec.n && gy as usize * 128 >= spec.m);
            pipelined += 1;
        } else if uses_wgmma && kernel.ptx.contains("cp.async.cg.shared.global") {
            // The cp.async pipeline (rows of a multiple of 16 bytes). M at most 64: the
            // skinny block (swap AB: one warpgroup per 64 columns of C and M rounded up to
            // 16 rows, m64n<rows>k32, 8 stages); above: the square one (two warpgroups per
            // 128 x 128 tile, m64n128k32, 5 stages where they fit in 227 KiB). Each stage
            // holds both operands as stored (128 bytes a row, 64 packed) in dynamic shared
            // memory, and each translated operand has three FP8 tiles.
            let skinny = spec.m <= 64;
            let (rows_a, rows_b, most, threads) = if skinny {
                (spec.m.div_ceil(16) * 16, 64, 8, 128)
            } else {
                (128, 128, 5, 256)
            };
            assert_eq!(kernel.block, (threads, 1, 1), "{spec:?}");
            assert!(gx as usize * rows_b >= spec.n && gy as usize * rows_a >= spec.m);
            let n = if skinny { rows_a } else { 128 };
            assert!(
                kernel
                    .ptx
                    .contains(&format!("wgmma.mma_async.sync.aligned.m64n{n}k32.f32")),
                "{spec:?}"
            );
            let stored = |rows: usize, packed| rows * if packed { 64 } else { 128 };
            let is_translated = |f| !matches!(f, ScaledFormat::F8E4M3 | ScaledFormat::F8E5M2);
            // NVFP4's 16-blocks: the first translated operand's tiles are split in two
            // halves (one instruction per 16-block).
            let sixteen = [spec.lhs_layout, spec.rhs_layout]
                .iter()
                .any(|l| matches!(l, ScaleLayout::Nvfp4 { block: 16, .. }));
            let split = [is_translated(spec.lhs), is_translated(spec.rhs)]
                .iter()
                .position(|&t| t && sixteen);
            let translated = |x: usize, rows: usize, f: ScaledFormat| {
                let halves = if split == Some(x) { 2 } else { 1 };
                if is_translated(f) {
                    2 * rows * 128 * halves
                } else {
                    0
                }
            };
            let ring = stored(rows_a, spec.lhs_packed) + stored(rows_b, spec.rhs_packed);
            let tiles = translated(0, rows_a, spec.lhs) + translated(1, rows_b, spec.rhs);
            // Block scales that change along K in blocks tiling the stage of 128 are staged
            // where K is whole stages: per row and stage 4, 8 or 16 bytes as stored (E8M0
            // per 32: 4 x 1; f32 per 128 / 64 / 32: 4 / 8 / 16) in a ring beside the codes,
            // and 2 entries of their f32 values; while 4 stages still fit.
            let per_k = |l: ScaleLayout| match l {
                ScaleLayout::Mx { block } | ScaleLayout::Nvfp4 { block, .. } => {
                    Some((block as usize, 1))
                }
                ScaleLayout::Blockwise { cols, .. } => Some((cols as usize, 4)),
                _ => None,
            };
            let segments = per_k(spec.lhs_layout).is_some() || per_k(spec.rhs_layout).is_some();
            let row_bytes = |l: ScaleLayout| match per_k(l) {
                Some((span, size)) if spec.k % 128 == 0 && segments && 128 % span == 0 => {
                    Some((128 / span * size, 128 / span * 4)).filter(|b| [4, 8, 16].contains(&b.0))
                }
                _ => None,
            };
            let (sa, sb) = (row_bytes(spec.lhs_layout), row_bytes(spec.rhs_layout));
            let entry = rows_a * sa.map_or(0, |b| b.0) + rows_b * sb.map_or(0, |b| b.0);
            let decoded = 2 * (rows_a * sa.map_or(0, |b| b.1) + rows_b * sb.map_or(0, |b| b.1));
            let with = most.min((227 * 1024 - 1024 - tiles - decoded) / (ring + entry));
            // (3 stages where the stages are long: an operand split, 8 instructions a stage,
            // or both translated from a byte a code.)
            let bytewise = |f: ScaledFormat, packed: bool| is_translated(f) && !packed;
            let long = split.is_some()
                || (bytewise(spec.lhs, spec.lhs_packed) && bytewise(spec.rhs, spec.rhs_packed));
            let least = if long { 3 } else { 4 };
            let bytes = if with >= least {
                with * (ring + entry) + tiles + decoded + 1024
            } else {
                let stages = most.min((227 * 1024 - 1024 - tiles) / ring);
                assert!(stages >= least, "{spec:?}");
                stages * ring + tiles + 1024
            };
            // Blocks that fold their E8M0 scales (`bar.red.or` decides it) keep 16 bytes a
            // binade of reach per folding operand after the rest: E2M1 8, E2M3 6, E3M2 4;
            // then, where B folds, 32 bytes for the scan's warps' ranges of B's codes.
            let tables = if kernel.ptx.contains("bar.red.or.pred") {
                let reach = |f, l| match (f, l) {
                    (_, ScaleLayout::Mx { block: 32 }) => match f {
                        ScaledFormat::F4E2M1 => 16 * 9,
                        ScaledFormat::F6E2M3 => 16 * 7,
                        ScaledFormat::F6E3M2 => 16 * 5,
                        _ => panic!("{spec:?}: an unexpected fold"),
                    },
                    _ => 0,
                };
                let scratch = if reach(spec.rhs, spec.rhs_layout) > 0 {
                    32
                } else {
                    0
                };
                reach(spec.lhs, spec.lhs_layout) + reach(spec.rhs, spec.rhs_layout) + scratch
            } else {
                0
            };
            assert_eq!(kernel.shared_bytes as usize, bytes + tables, "{spec:?}");
            assert!(
                kernel
                    .ptx
                    .contains(".extern .shared .align 16 .b8 __dynamic_shmem__0[]"),
                "{spec:?}"
            );
            pipelined += 1;
        } else if uses_wgmma {
            // One warpgroup per block, a 64 x 128 tile of C, A and B tiles in shared memory.
            assert_eq!(kernel.block, (128, 1, 1), "{spec:?}");
            assert!(kernel
                .ptx
                .contains("wgmma.mma_async.sync.aligned.m64n128k32.f32"));
            assert!(gx as usize * 128 >= spec.n && gy as usize * 64 >= spec.m);
            assert_eq!(kernel.shared_bytes, 0, "{spec:?}");
            assert!(kernel.ptx.contains(".shared .align"), "{spec:?}");
            assert!(
                kernel.ptx.contains("fence.proxy.async.shared::cta"),
                "{spec:?}"
            );
        } else {
            // 16 x 16 threads per 64 x 64 tile (columns on x), decoded chunks of A and B in
            // shared memory.
            assert_eq!(kernel.block, (16, 16, 1), "{spec:?}");
            assert!(kernel.ptx.contains("bar.sync"), "{spec:?}");
            assert!(
                kernel.ptx.contains("st.shared.f32") || kernel.ptx.contains("st.shared.b32"),
                "{spec:?}"
            );
            assert!(
                (gx * 64) as usize >= spec.n && (gy * 64) as usize >= spec.m,
                "{spec:?}: grid {:?} block {:?}",
                kernel.grid,
                kernel.block
            );
            assert_eq!((bx, by), (16, 16));
        }
        // Every argument reaches the kernel: as a memref, or as a tensor map (TMA).
        let roles = spec.roles();
        let memrefs: Vec<usize> = kernel
            .params
            .iter()
            .filter_map(|p| match p {
                KernelParam::MemRef { arg, .. } | KernelParam::TensorMap { arg, .. } => Some(*arg),
                _ => None,
            })
            .collect();
        let mut sorted = memrefs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, (0..roles.len()).collect::<Vec<_>>(), "{spec:?}");
        let entry = format!(".entry {}(", kernel.name);
        let decl = &kernel.ptx[kernel.ptx.find(&entry).expect("entry in PTX")..];
        let decl = &decl[..decl.find(')').expect("end of parameters")];
        assert_eq!(
            decl.matches(".param ").count(),
            kernel.flat_param_count(),
            "{spec:?}"
        );
        assert!(kernel.ptx.contains(".target sm_90a"));
    }
    assert!(mma >= 15, "{mma} tensor-core kernels");
    // The FP8-embeddable formats with every layout but NVFP4's 16-blocks.
    assert!(pipelined >= 15, "{pipelined} pipelined kernels");
}

/// sm_100a: the tcgen05 kernel where the formats allow (one CTA of 128 threads per 128 x 64
/// tile, D in tensor memory): the FP8 kinds, or `kind::f16` on the half patterns of the
/// formats no FP8 type holds (the FNUZ ones), the generic one elsewhere; parameters as the
/// runner passes them, no local memory, PTX ISA 8.8.
#[test]
fn blackwell_kernels_compile_for_every_format_and_layout() {
    let session = Session::new();
    let (mut tc, mut tc_scaled, mut tc_half) = (0, 0, 0);
    for spec in specs() {
        let mut module = spec.build_module(session.context(), "mm");
        let kernel = session
            .compile_nvvm(&mut module, "mm", "sm_100a", "auto")
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let plain = kernel.ptx.contains("tcgen05.mma.cta_group::1.kind::f8f6f4");
        let mxf4 = kernel
            .ptx
            .contains("tcgen05.mma.cta_group::1.kind::mxf4.block_scale");
        let nvf4 = kernel
            .ptx
            .contains("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16");
        let scaled = mxf4
            || nvf4
            || kernel
                .ptx
                .contains("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale");
        // kind::mxf4nvf4 exactly for NVFP4 E2M1 x E2M1.
        let nvfp4 = |l| matches!(l, ScaleLayout::Nvfp4 { block: 16, .. });
        assert_eq!(
            nvf4,
            spec.lhs == ScaledFormat::F4E2M1
                && spec.rhs == ScaledFormat::F4E2M1
                && nvfp4(spec.lhs_layout)
                && nvfp4(spec.rhs_layout),
            "{spec:?}"
        );
        // kind::mxf4 exactly for MX E2M1 x E2M1.
        assert_eq!(
            mxf4,
            scaled && !nvf4 && spec.lhs == ScaledFormat::F4E2M1 && spec.rhs == ScaledFormat::F4E2M1,
            "{spec:?}"
        );
        let uses = plain || scaled;
        assert_eq!(
            uses,
            mma_format(spec.lhs) && mma_format(spec.rhs),
            "{spec:?}"
        );
        let half = kernel.ptx.contains("tcgen05.mma.cta_group::1.kind::f16");
        assert!(!(half && uses), "{spec:?}");
        if spec.lhs.is_fnuz() && spec.lhs_layout == ScaleLayout::PerTensor {
            assert!(half, "{spec:?}: kind::f16 on half patterns");
        }
        tc_half += half as usize;
        let uses = uses || half;
        // A block-scaled kind exactly for two MX operands with 32-blocks or two NVFP4 E2M1
        // ones, its scale factors stored into tensor memory.
        let mx32 = ScaleLayout::Mx { block: 32 };
        assert_eq!(
            scaled,
            uses && ((spec.lhs_layout == mx32 && spec.rhs_layout == mx32) || nvf4),
            "{spec:?}"
        );
        assert_eq!(
            scaled,
            kernel.ptx.contains("tcgen05.st.sync.aligned.32x32b.x4.b32"),
            "{spec:?}"
        );
        tc_scaled += scaled as usize;
        assert!(kernel.ptx.contains(".version 8.8") && kernel.ptx.contains(".target sm_100a"));
        assert!(!kernel.ptx.contains(".local"), "{spec:?}: local memory");
        assert!(
            !kernel.ptx.contains(".extern .func"),
            "{spec:?}: external call"
        );
        if uses {
            let (gx, gy, _) = kernel.grid;
            assert_eq!(kernel.block, (128, 1, 1), "{spec:?}");
            assert!(gx as usize * 64 >= spec.n && gy as usize * 128 >= spec.m);
            for op in [
                "tcgen05.alloc",
                "tcgen05.ld.sync.aligned.32x32b.x64",
                "tcgen05.dealloc",
            ] {
                assert!(kernel.ptx.contains(op), "{spec:?}: no {op}");
            }
            tc += 1;
        }
        let entry = format!(".entry {}(", kernel.name);
        let decl = &kernel.ptx[kernel.ptx.find(&entry).expect("entry in PTX")..];
        let decl = &decl[..decl.find(')').expect("end of parameters")];
        assert_eq!(
            decl.matches(".param ").count(),
            kernel.flat_param_count(),
            "{spec:?}"
        );
    }
    assert!(tc >= 15, "{tc} tcgen05 kernels");
    assert!(tc_half >= 2, "{tc_half} kind::f16 tcgen05 kernels");
    assert!(tc_scaled >= 5, "{tc_scaled} block-scaled tcgen05 kernels");
}

/// `kernel=wgmma-tma` through the whole compile: each operand used as stored (E4M3 / E5M2)
/// becomes a tensor-map parameter (its argument, shape, a 128 x 128-byte box, the 128-byte
/// swizzle) that the runtime encodes and passes as one address; the PTX acquires the maps,
/// loads the boxes with `cp.async.bulk.tensor` counted on mbarriers, and keeps no cp.async
/// where TMA feeds both operands. With packed E2M1 A only B is mapped, and A still comes
/// through the producer threads' cp.async. 200 x 136 is 2 x 2 tiles: B is multicast, the
/// kernel fixed to clusters of 2 (`.reqnctapercluster`, the launch's cluster size), B's box
/// half a tile's rows. Two translated operands are refused.
#[test]
fn tma_kernels_take_tensor_maps() {
    let session = Session::new();
    let spec = |lhs, lhs_layout, lhs_packed, rhs, rhs_layout| MatmulSpec {
        m: 200,
        n: 136,
        k: 416,
        lhs,
        rhs,
        lhs_layout,
        rhs_layout,
        lhs_packed,
        rhs_packed: false,
        bias: true,
        bf16: false,
    };
    let (e4, e5, f4) = (
        ScaledFormat::F8E4M3,
        ScaledFormat::F8E5M2,
        ScaledFormat::F4E2M1,
    );
    // 2 x 2 tiles of C: B multicast in clusters of 2, its boxes half of a tile's rows.
    let map = |arg, rows, boxed| KernelParam::TensorMap {
        arg,
        element: lowp_runtime::tensor_map::MapElement::U8,
        shape: vec![rows, 416],
        boxed: vec![boxed, 128],
        swizzle: 128,
    };
    for (spec, maps, copies) in [
        (
            spec(
                e4,
                ScaleLayout::PerTensor,
                false,
                e5,
                ScaleLayout::PerTensor,
            ),
            vec![map(0, 200, 128), map(2, 136, 64)],
            false,
        ),
        (
            spec(f4, ScaleLayout::MX, true, e4, ScaleLayout::MX),
            vec![map(2, 136, 64)],
            true,
        ),
    ] {
        let mut module = spec.build_module(session.context(), "mm");
        // (B multicast in clusters of 2, where the tiles allow: multicast=auto.)
        let kernel = session
            .compile_nvvm_with(
                &mut module,
                "mm",
                "sm_90a",
                "wgmma-tma",
                &[("multicast", "auto")],
            )
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let got: Vec<KernelParam> = kernel
            .params
            .iter()
            .filter(|p| matches!(p, KernelParam::TensorMap { .. }))
            .cloned()
            .collect();
        assert_eq!(got, maps, "{spec:?}");
        assert_eq!(kernel.block, (384, 1, 1));
        assert_eq!(kernel.cluster, (2, 1, 1));
        for text in [
            "fence.proxy.tensormap::generic.acquire.gpu",
            ".reqnctapercluster 2, 1, 1",
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "complete_tx::bytes.multicast::cluster",
            "mbarrier.arrive.release.cluster.shared::cluster.b64",
            "wgmma.mma_async.sync.aligned.m64n128k32.f32",
        ] {
            assert!(kernel.ptx.contains(text), "{spec:?}: no {text}");
        }
        assert_eq!(kernel.ptx.contains("cp.async.cg.shared.global"), copies);
        let entry = format!(".entry {}(", kernel.name);
        let decl = &kernel.ptx[kernel.ptx.find(&entry).expect("entry in PTX")..];
        let decl = &decl[..decl.find(')').expect("end of parameters")];
        assert_eq!(decl.matches(".param ").count(), kernel.flat_param_count());
        // The maps travel in the manifest to the GPU machine.
        let back =
            lowp_jit::gpu::GpuKernel::from_manifest(&kernel.to_manifest(), String::new()).unwrap();
        assert_eq!(back.params, kernel.params);
    }
    let mut module =
        spec(f4, ScaleLayout::MX, true, f4, ScaleLayout::MX).build_module(session.context(), "mm");
    let e = session
        .compile_nvvm(&mut module, "mm", "sm_90a", "wgmma-tma")
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("TMA loads the operands used as stored"),
        "{e}"
    );
}

/// `translate-once=on` (MXFP4 x MXFP4 at 200 x 136 x 2048): one kernel of three launches
/// from one PTX (the outlined modules merged): the translation (a block per 128 rows and
/// 1024 of K: 2 + 2 tiles, 2 chunks), the TMA block on the translated operands (tensor
/// maps of workspaces 0 and 2: E5M2 codes, 200 and 136 rows of 2048 bytes) and the
/// barrier pipeline on the stored ones; five workspaces past the entry's five arguments
/// (codes and f32 scales for each operand: A's per row, 200 x 16, B's per 128 rows, 2 x
/// 16; flags 4 x 2), spanned exactly by
/// every parameter (`matmul::check`), carried by the manifest.
#[test]
fn translate_once_kernels_share_workspaces() {
    let session = Session::new();
    let f4 = ScaledFormat::F4E2M1;
    let spec = MatmulSpec {
        m: 200,
        n: 136,
        k: 2048,
        lhs: f4,
        rhs: f4,
        lhs_layout: ScaleLayout::MX,
        rhs_layout: ScaleLayout::MX,
        lhs_packed: true,
        rhs_packed: true,
        bias: false,
        bf16: false,
    };
    let mut module = spec.build_module(session.context(), "mm");
    let kernel = session
        .compile_nvvm_with(
            &mut module,
            "mm",
            "sm_90a",
            "auto",
            &[("translate-once", "on")],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel.then.len(), 2);
    assert_eq!((kernel.grid, kernel.block), ((2, 4, 1), (256, 1, 1)));
    assert_eq!(kernel.then[0].block, (384, 1, 1));
    assert_eq!(kernel.then[1].block, (256, 1, 1));
    assert_eq!(kernel.arguments, 5);
    let bytes: Vec<u64> = kernel.workspaces.iter().map(|w| w.bytes).collect();
    assert_eq!(
        bytes,
        [200 * 2048, 200 * 16 * 4, 136 * 2048, 2 * 16 * 4, 4 * 2 * 4]
    );
    let maps: Vec<(usize, Vec<i64>)> = kernel.then[0]
        .params
        .iter()
        .filter_map(|p| match p {
            KernelParam::TensorMap { arg, shape, .. } => Some((*arg, shape.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(maps, [(5, vec![200, 2048]), (7, vec![136, 2048])]);
    for (i, launch) in std::iter::once(&kernel).chain(&kernel.then).enumerate() {
        assert!(
            kernel.ptx.contains(&format!(".entry {}(", launch.name)),
            "launch {i}: no entry {}",
            launch.name
        );
    }
    assert!(kernel
        .ptx
        .contains("wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2"));
    assert!(kernel
        .ptx
        .contains("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"));
    kernel.ptx_check().unwrap();
    lowp_runtime::matmul::check(&kernel, &spec, &spec.roles()).unwrap();
    let back =
        lowp_jit::gpu::GpuKernel::from_manifest(&kernel.to_manifest(), kernel.ptx.clone()).unwrap();
    assert_eq!(back.workspaces, kernel.workspaces);
    assert_eq!(back.then.len(), 2);
    assert_eq!(back.then[1].params, kernel.then[1].params);
    back.ptx_check().unwrap();
}

#[test]
fn kernel_errors_are_clear() {
    let session = Session::new();
    let spec = &specs()[0];
    let mut module = spec.build_module(session.context(), "mm");
    let e = session
        .compile_nvvm(&mut module, "mm", "gfx942", "generic")
        .unwrap_err();
    assert!(e.to_string().contains("not an NVIDIA chip"), "{e}");
    let mut module = spec.build_module(session.context(), "mm");
    let e = session
        .compile_nvvm(&mut module, "other", "sm_90a", "generic")
        .unwrap_err();
    assert!(e.to_string().contains("no function 'other'"), "{e}");
    let mut module = spec.build_module(session.context(), "mm");
    let e = session
        .compile_nvvm(&mut module, "mm", "sm_90a", "tma")
        .unwrap_err();
    assert!(e.to_string().contains("unknown kernel 'tma'"), "{e}");
    // Tuning options: only split-k and multicast, with values the pass takes.
    for (tuning, says) in [
        (
            ("emulate", "true"),
            "'emulate' is not a tuning option of lowp-to-nvvm",
        ),
        (
            ("multicast", "4"),
            "'4' is not accepted; expected auto, 1, 2",
        ),
        (
            ("split-k", "3"),
            "'3' is not accepted; expected auto, 1, 2, 4, 8",
        ),
    ] {
        let mut module = spec.build_module(session.context(), "mm");
        let e = session
            .compile_nvvm_with(&mut module, "mm", "sm_90a", "auto", &[tuning])
            .unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
    let mut module = spec.build_module(session.context(), "mm");
    let e = session
        .compile_nvvm(&mut module, "mm", "sm_89", "wgmma")
        .unwrap_err();
    assert!(
        e.to_string().contains("sm_89 has no wgmma (sm_90a only)"),
        "{e}"
    );
    // E5M2 FNUZ embeds in no OCP FP8 type, and its finite exponent 31 has no f16 pattern:
    // mma-sync takes its bf16 form (lit/Run/Cuda/ptx.test: the refusal of a pair none
    // takes, with the three reasons).
    let fnuz = specs()
        .into_iter()
        .find(|s| s.lhs == ScaledFormat::F8E5M2Fnuz)
        .expect("an FNUZ spec");
    let mut module = fnuz.build_module(session.context(), "mm");
    let kernel = session
        .compile_nvvm(&mut module, "mm", "sm_90a", "mma-sync")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(kernel
        .ptx
        .contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
}

#[test]
fn kernels_run_where_a_gpu_is() {
    let Ok(gpu) = lowp_runtime::Gpu::open(0) else {
        eprintln!("no CUDA GPU here: the compile-side tests above still ran");
        return;
    };
    let session = Session::new();
    for (spec, choice) in specs()
        .into_iter()
        .flat_map(|s| [(s.clone(), "generic"), (s.clone(), "mma-sync"), (s, "auto")])
        .filter(|(s, c)| *c != "mma-sync" || (mma_format(s.lhs) && mma_format(s.rhs)))
    {
        let mut module = spec.build_module(session.context(), "mm");
        let kernel = session
            .compile_nvvm(&mut module, "mm", "sm_90a", choice)
            .unwrap();
        let inputs = spec.inputs(3);
        let ptx = gpu.load_ptx(&kernel.ptx).unwrap();
        let roles = spec.roles();
        let buffers: Vec<_> = roles
            .iter()
            .map(|&r| gpu.upload(&spec.role_bytes(r, &inputs)).unwrap())
            .collect();
        let addresses: Vec<u64> = buffers.iter().map(|b| gpu.address(b)).collect();
        // SAFETY: one buffer per argument, in the entry's shapes.
        unsafe { kernel.launch(&gpu, &ptx, &addresses) }.unwrap();
        gpu.synchronize().unwrap();
        let out = roles
            .iter()
            .position(|&r| r == lowp_jit::Role::Out)
            .unwrap();
        let got = spec.result_from_bytes(&gpu.download(&buffers[out]).unwrap());
        let r = spec.check(&inputs, &got);
        assert!(r.passed, "{spec:?} {choice}: {:?}", r.stats);
    }
}

/// The GPU passes' `chip` option offers exactly the chips of its vendor whose facts
/// (`lowp_passes::chip::CHIPS`: shared memory, multiprocessors, PTX ISA) size the kernels.
#[test]
fn the_chip_options_offer_the_known_chips() {
    use lowp_passes::chip::{Vendor, CHIPS};
    use lowp_passes::registry::OptionKind;
    for (pass, vendor) in [
        (&lowp_passes::to_nvvm::PASS, Vendor::Nvidia),
        (&lowp_passes::to_rocdl::PASS, Vendor::Amd),
    ] {
        let known: Vec<&str> = CHIPS
            .iter()
            .filter(|c| c.vendor == vendor)
            .map(|c| c.name)
            .collect();
        let chip = pass.options.iter().find(|o| o.name == "chip").unwrap();
        let OptionKind::Choice(offered) = chip.kind else {
            panic!("{}: the chip option is a choice", pass.argument)
        };
        assert_eq!(offered, known.as_slice(), "{}", pass.argument);
    }
}
