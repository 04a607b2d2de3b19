//! # lowp-codegen
//!
//! From an MLIR module in the LLVM dialect (what lowp's pipelines produce) to LLVM IR, PTX,
//! AMDGPU assembly or objects, and host assembly or objects, for a [`Chip`]. The module is
//! translated with MLIR's LLVM IR translation (NVVM / ROCDL intrinsics included) and handed
//! to LLVM's backends through the LLVM C API of the same static LLVM 22 that mlir-sys links.

#![deny(missing_docs)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use melior::ir::Module;

pub use lowp_passes::chip::{Chip, Vendor, CHIPS};

/// What to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Textual LLVM IR.
    Llvm,
    /// Target assembly: PTX for NVIDIA, AMDGPU assembly, host assembly.
    Asm,
    /// A relocatable object (ELF).
    Obj,
}

/// Why code generation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodegenError {
    /// The module still holds ops the LLVM translation does not know.
    #[error("the module is not in the LLVM dialect (translation failed):\n{0}")]
    Translation(String),
    /// The module is in the LLVM dialect but defines what LLVM refuses (a function under a
    /// name LLVM keeps for its intrinsics); the located diagnostics say what.
    #[error("{0}")]
    Refused(String),
    /// LLVM has no backend for the triple.
    #[error("no LLVM target for '{triple}': {message}")]
    NoTarget {
        /// Triple.
        triple: String,
        /// LLVM's message.
        message: String,
    },
    /// The backend failed.
    #[error("LLVM could not emit code for {chip}: {message}")]
    Emit {
        /// Chip.
        chip: String,
        /// LLVM's message.
        message: String,
    },
}

// The LLVM C API (llvm-c/*.h), from the static LLVM that mlir-sys links.
type LLVMContextRef = mlir_sys::LLVMContextRef;
type LLVMModuleRef = mlir_sys::LLVMModuleRef;
type LLVMTargetRef = *mut c_void;
type LLVMTargetMachineRef = *mut c_void;
type LLVMMemoryBufferRef = *mut c_void;
type LLVMTargetDataRef = *mut c_void;

const LLVM_CODEGEN_OPT_AGGRESSIVE: c_int = 3;
const LLVM_RELOC_PIC: c_int = 2;
const LLVM_CODE_MODEL_DEFAULT: c_int = 0;
const LLVM_ASSEMBLY_FILE: c_int = 0;
const LLVM_OBJECT_FILE: c_int = 1;

unsafe extern "C" {
    fn LLVMContextCreate() -> LLVMContextRef;
    fn LLVMContextDispose(c: LLVMContextRef);
    fn LLVMDisposeModule(m: LLVMModuleRef);
    fn LLVMPrintModuleToString(m: LLVMModuleRef) -> *mut c_char;
    fn LLVMDisposeMessage(m: *mut c_char);
    fn LLVMSetTarget(m: LLVMModuleRef, triple: *const c_char);
    fn LLVMSetModuleDataLayout(m: LLVMModuleRef, dl: LLVMTargetDataRef);
    fn LLVMGetDefaultTargetTriple() -> *mut c_char;
    fn LLVMGetHostCPUName() -> *mut c_char;
    fn LLVMGetHostCPUFeatures() -> *mut c_char;
    fn LLVMGetTargetFromTriple(
        triple: *const c_char,
        t: *mut LLVMTargetRef,
        err: *mut *mut c_char,
    ) -> c_int;
    fn LLVMCreateTargetMachine(
        t: LLVMTargetRef,
        triple: *const c_char,
        cpu: *const c_char,
        features: *const c_char,
        level: c_int,
        reloc: c_int,
        model: c_int,
    ) -> LLVMTargetMachineRef;
    fn LLVMDisposeTargetMachine(tm: LLVMTargetMachineRef);
    fn LLVMCreateTargetDataLayout(tm: LLVMTargetMachineRef) -> LLVMTargetDataRef;
    fn LLVMDisposeTargetData(dl: LLVMTargetDataRef);
    fn LLVMTargetMachineEmitToMemoryBuffer(
        tm: LLVMTargetMachineRef,
        m: LLVMModuleRef,
        kind: c_int,
        err: *mut *mut c_char,
        out: *mut LLVMMemoryBufferRef,
    ) -> c_int;
    fn LLVMGetBufferStart(b: LLVMMemoryBufferRef) -> *const c_char;
    fn LLVMGetBufferSize(b: LLVMMemoryBufferRef) -> usize;
    fn LLVMDisposeMemoryBuffer(b: LLVMMemoryBufferRef);

    fn LLVMInitializeNVPTXTargetInfo();
    fn LLVMInitializeNVPTXTarget();
    fn LLVMInitializeNVPTXTargetMC();
    fn LLVMInitializeNVPTXAsmPrinter();
    fn LLVMInitializeAMDGPUTargetInfo();
    fn LLVMInitializeAMDGPUTarget();
    fn LLVMInitializeAMDGPUTargetMC();
    fn LLVMInitializeAMDGPUAsmPrinter();
    fn LLVMInitializeX86TargetInfo();
    fn LLVMInitializeX86Target();
    fn LLVMInitializeX86TargetMC();
    fn LLVMInitializeX86AsmPrinter();
}

fn init_targets() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: LLVM's target registration functions and handler installation, called once.
    // LLVM's fatal errors (a backend that cannot select an instruction, say) cannot be
    // recovered from: one `error:` line and exit 1 instead of an abort. A tool that
    // installed the handler under its own name keeps it.
    lowp_dialect::exit_on_llvm_fatal_error("lowp");
    ONCE.call_once(|| unsafe {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        LLVMInitializeAMDGPUTargetInfo();
        LLVMInitializeAMDGPUTarget();
        LLVMInitializeAMDGPUTargetMC();
        LLVMInitializeAMDGPUAsmPrinter();
        LLVMInitializeX86TargetInfo();
        LLVMInitializeX86Target();
        LLVMInitializeX86TargetMC();
        LLVMInitializeX86AsmPrinter();
    });
}

/// Take an LLVM-owned message.
fn take_message(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string allocated by LLVM, disposed once here.
    unsafe {
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        LLVMDisposeMessage(p);
        s
    }
}

/// An LLVM module translated from MLIR, with its own LLVM context.
struct LlvmModule {
    context: LLVMContextRef,
    module: LLVMModuleRef,
}

impl Drop for LlvmModule {
    fn drop(&mut self) {
        // SAFETY: created below and disposed once, module before context.
        unsafe {
            LLVMDisposeModule(self.module);
            LLVMContextDispose(self.context);
        }
    }
}

fn translate(
    module: &Module,
    diagnostics: &dyn Fn() -> String,
) -> Result<LlvmModule, CodegenError> {
    if lowp_passes::ir::emit_reserved_llvm_name(module.as_operation()).is_some()
        || lowp_passes::ir::emit_missing_resource(module.as_operation()).is_some()
    {
        return Err(CodegenError::Refused(diagnostics()));
    }
    // SAFETY: a fresh LLVM context; the translation returns null on failure.
    unsafe {
        let context = LLVMContextCreate();
        let llvm = mlir_sys::mlirTranslateModuleToLLVMIR(module.as_operation().to_raw(), context);
        if llvm.is_null() {
            LLVMContextDispose(context);
            return Err(CodegenError::Translation(diagnostics()));
        }
        Ok(LlvmModule {
            context,
            module: llvm,
        })
    }
}

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL in target strings")
}

/// Generate code for `chip` from an LLVM-dialect module. `diagnostics` is called for the
/// context's messages when the translation fails.
pub fn emit(
    module: &Module,
    chip: Chip,
    what: Emit,
    diagnostics: &dyn Fn() -> String,
) -> Result<Vec<u8>, CodegenError> {
    init_targets();
    let llvm = translate(module, diagnostics)?;
    // SAFETY: host queries return LLVM-owned strings, taken once.
    let (triple, cpu, features) = if chip.vendor == Vendor::Host {
        unsafe {
            (
                take_message(LLVMGetDefaultTargetTriple()),
                take_message(LLVMGetHostCPUName()),
                take_message(LLVMGetHostCPUFeatures()),
            )
        }
    } else {
        (
            chip.triple.to_string(),
            chip.cpu.to_string(),
            chip.features.to_string(),
        )
    };
    let (ctriple, ccpu, cfeatures) = (c(&triple), c(&cpu), c(&features));
    let mut target: LLVMTargetRef = std::ptr::null_mut();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: valid strings and out-pointers.
    if unsafe { LLVMGetTargetFromTriple(ctriple.as_ptr(), &mut target, &mut err) } != 0 {
        return Err(CodegenError::NoTarget {
            triple,
            message: take_message(err),
        });
    }
    // SAFETY: a target from the registry and valid strings.
    let tm = unsafe {
        LLVMCreateTargetMachine(
            target,
            ctriple.as_ptr(),
            ccpu.as_ptr(),
            cfeatures.as_ptr(),
            LLVM_CODEGEN_OPT_AGGRESSIVE,
            LLVM_RELOC_PIC,
            LLVM_CODE_MODEL_DEFAULT,
        )
    };
    struct Tm(LLVMTargetMachineRef);
    impl Drop for Tm {
        fn drop(&mut self) {
            // SAFETY: created above, disposed once.
            unsafe { LLVMDisposeTargetMachine(self.0) }
        }
    }
    let tm = Tm(tm);
    // SAFETY: the module and target machine are alive; the layout is copied into the module.
    unsafe {
        LLVMSetTarget(llvm.module, ctriple.as_ptr());
        let dl = LLVMCreateTargetDataLayout(tm.0);
        LLVMSetModuleDataLayout(llvm.module, dl);
        LLVMDisposeTargetData(dl);
    }
    if what == Emit::Llvm {
        // SAFETY: printing a live module.
        return Ok(take_message(unsafe { LLVMPrintModuleToString(llvm.module) }).into_bytes());
    }
    let kind = if what == Emit::Asm {
        LLVM_ASSEMBLY_FILE
    } else {
        LLVM_OBJECT_FILE
    };
    let mut buffer: LLVMMemoryBufferRef = std::ptr::null_mut();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: live target machine and module, valid out-pointers.
    let failed = unsafe {
        LLVMTargetMachineEmitToMemoryBuffer(tm.0, llvm.module, kind, &mut err, &mut buffer)
    };
    if failed != 0 {
        return Err(CodegenError::Emit {
            chip: chip.name.to_string(),
            message: take_message(err),
        });
    }
    // SAFETY: a buffer LLVM filled; copied out and disposed once.
    unsafe {
        let bytes = std::slice::from_raw_parts(
            LLVMGetBufferStart(buffer) as *const u8,
            LLVMGetBufferSize(buffer),
        )
        .to_vec();
        LLVMDisposeMemoryBuffer(buffer);
        Ok(bytes)
    }
}

/// The serialized kernels of a module after `gpu-module-to-binary`: for every `gpu.binary`,
/// its symbol name and the text (PTX or ISA) or bytes of its first object, in module order.
pub fn gpu_objects(module: &Module) -> Vec<(String, Vec<u8>)> {
    use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
    use melior::ir::AttributeLike;
    let mut out = Vec::new();
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() != Ok("gpu.binary") {
            return WalkResult::Advance;
        }
        let name = op
            .attribute("sym_name")
            .ok()
            .and_then(lowp_passes::ir::string_value)
            .unwrap_or_default();
        // SAFETY: `objects` is an array of #gpu.object attributes (the verifier checked it).
        let object = op.attribute("objects").ok().and_then(|objects| unsafe {
            let raw = objects.to_raw();
            (mlir_sys::mlirAttributeIsAArray(raw) && mlir_sys::mlirArrayAttrGetNumElements(raw) > 0)
                .then(|| {
                    let s = mlir_sys::mlirGPUObjectAttrGetObject(
                        mlir_sys::mlirArrayAttrGetElement(raw, 0),
                    );
                    std::slice::from_raw_parts(s.data as *const u8, s.length).to_vec()
                })
        });
        if let Some(object) = object {
            out.push((name, object));
        }
        WalkResult::Skip
    });
    out
}
