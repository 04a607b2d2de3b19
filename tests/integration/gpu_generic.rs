//! The generic GPU kernel's compile side, on every named format and scale layout: the
//! launch read from gpu.launch_func covers C, every memref operand is an entry argument,
//! and the PTX entry declares exactly the parameters `GpuKernel::launch` passes. Where a
//! CUDA GPU is present the kernel also runs and is checked against the oracle (lit's
//! Run/Cuda/generic-check.test does the same through lowp-run).

use lowp_formats::ScaledFormat;
use lowp_jit::gpu::KernelParam;
use lowp_jit::{MatmulSpec, Session};

fn specs() -> Vec<MatmulSpec> {
    let layouts = lowp_tests::MATMUL_LAYOUTS;
    let mut out = Vec::new();
    for (i, &f) in ScaledFormat::NAMED.iter().enumerate() {
        for (j, &l) in layouts.iter().enumerate() {
            let spec = MatmulSpec {
                m: 13 + i,
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

#[test]
fn generic_kernel_compiles_for_every_format_and_layout() {
    let session = Session::new();
    let specs = specs();
    assert!(specs.len() >= 25, "{} specs", specs.len());
    for spec in &specs {
        let mut module = spec.build_module(session.context(), "mm");
        let kernel = session
            .compile_nvvm_generic(&mut module, "mm", "sm_90a")
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let (gx, gy, _) = kernel.grid;
        let (bx, by, _) = kernel.block;
        // Columns on x, rows on y; every element of C has a thread.
        assert!((gx * bx) as usize >= spec.n && (gy * by) as usize >= spec.m);
        assert!(bx * by <= 1024);
        let roles = spec.roles();
        let memrefs: Vec<usize> = kernel
            .params
            .iter()
            .filter_map(|p| match p {
                KernelParam::MemRef { arg, .. } => Some(*arg),
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
}

#[test]
fn generic_kernel_errors_are_clear() {
    let session = Session::new();
    let spec = &specs()[0];
    let mut module = spec.build_module(session.context(), "mm");
    let e = session
        .compile_nvvm_generic(&mut module, "mm", "gfx942")
        .unwrap_err();
    assert!(e.to_string().contains("not an NVIDIA chip"), "{e}");
    let mut module = spec.build_module(session.context(), "mm");
    let e = session
        .compile_nvvm_generic(&mut module, "other", "sm_90a")
        .unwrap_err();
    assert!(e.to_string().contains("no function 'other'"), "{e}");
}

#[test]
fn generic_kernel_runs_where_a_gpu_is() {
    let Ok(gpu) = lowp_runtime::Gpu::open(0) else {
        eprintln!("no CUDA GPU here: the compile-side tests above still ran");
        return;
    };
    let session = Session::new();
    for spec in specs() {
        let mut module = spec.build_module(session.context(), "mm");
        let kernel = session
            .compile_nvvm_generic(&mut module, "mm", "sm_90a")
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
        assert!(r.passed, "{spec:?}: {:?}", r.stats);
    }
}
