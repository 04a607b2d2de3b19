//! The C ABI of `dialects/lowp/include/lowp-c/Lowp.h`, declared by hand (it is small and
//! stable). Every function is implemented in `dialects/lowp/lib/*.cpp`.

#![allow(non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_void};

use mlir_sys::{
    MlirAttribute, MlirContext, MlirDialectHandle, MlirDialectRegistry, MlirLocation,
    MlirOperation, MlirStringRef, MlirType,
};

#[repr(C)]
pub struct LowpPassOption {
    pub name: *const c_char,
    pub default_value: *const c_char,
    pub description: *const c_char,
    pub is_flag: c_int,
}

pub type LowpPassRunFn =
    unsafe extern "C" fn(*mut c_void, MlirOperation, usize, *const MlirStringRef) -> c_int;
pub type LowpReportFn = unsafe extern "C" fn(*mut c_void, MlirStringRef);
pub type LowpPassValidateFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const MlirStringRef,
    LowpReportFn,
    *mut c_void,
) -> c_int;

#[repr(C)]
pub struct LowpPassSpec {
    pub argument: *const c_char,
    pub name: *const c_char,
    pub description: *const c_char,
    pub op_name: *const c_char,
    pub num_options: usize,
    pub options: *const LowpPassOption,
    pub num_dependent_dialects: usize,
    pub dependent_dialects: *const MlirDialectHandle,
    pub user_data: *mut c_void,
    pub run: LowpPassRunFn,
    pub validate: Option<LowpPassValidateFn>,
}

unsafe extern "C" {
    pub fn mlirGetDialectHandle__lowp__() -> MlirDialectHandle;

    pub fn lowpMinifloatTypeGet(
        ctx: MlirContext,
        exp: c_uint,
        mant: c_uint,
        bias: c_int,
    ) -> MlirType;
    pub fn lowpTypeIsAMinifloat(t: MlirType) -> bool;
    pub fn lowpMinifloatTypeGetExpBits(t: MlirType) -> c_uint;
    pub fn lowpMinifloatTypeGetMantBits(t: MlirType) -> c_uint;
    pub fn lowpMinifloatTypeGetBias(t: MlirType) -> c_int;
    pub fn lowpPackedTypeGet(element: MlirType) -> MlirType;
    pub fn lowpTypeIsAPacked(t: MlirType) -> bool;
    pub fn lowpPackedTypeGetElement(t: MlirType) -> MlirType;
    pub fn lowpCodeTypeGetWidth(t: MlirType) -> c_uint;
    pub fn lowpCodeTypeGetStorageType(t: MlirType) -> MlirType;

    pub fn lowpPerTensorAttrGet(ctx: MlirContext) -> MlirAttribute;
    pub fn lowpPerChannelAttrGet(ctx: MlirContext) -> MlirAttribute;
    pub fn lowpMxAttrGet(ctx: MlirContext, block: c_uint) -> MlirAttribute;
    pub fn lowpNvfp4AttrGet(ctx: MlirContext, block: c_uint, global: bool) -> MlirAttribute;
    pub fn lowpBlockwiseAttrGet(ctx: MlirContext, rows: c_uint, cols: c_uint) -> MlirAttribute;
    pub fn lowpScaleLayoutGetKind(a: MlirAttribute) -> c_int;
    pub fn lowpScaleLayoutGetBlock(a: MlirAttribute) -> c_uint;
    pub fn lowpScaleLayoutGetTileRows(a: MlirAttribute) -> c_uint;
    pub fn lowpScaleLayoutGetTileCols(a: MlirAttribute) -> c_uint;
    pub fn lowpScaleLayoutHasGlobal(a: MlirAttribute) -> bool;
    pub fn lowpRoundingAttrGet(ctx: MlirContext, rounding: c_int) -> MlirAttribute;
    pub fn lowpRoundingAttrGetValue(a: MlirAttribute) -> c_int;

    pub fn lowpEmitRemark(loc: MlirLocation, message: MlirStringRef);
    pub fn lowpAttributeIsMissingResource(a: MlirAttribute) -> bool;
    pub fn lowpResourceSizeMismatch(
        a: MlirAttribute,
        blob_bytes: *mut i64,
        type_bytes: *mut i64,
    ) -> bool;

    pub fn lowpRegisterRustPass(spec: *const LowpPassSpec) -> bool;
    pub fn lowpRegisterPassPipeline(
        argument: *const c_char,
        description: *const c_char,
        passes: *const c_char,
        report: LowpReportFn,
        report_ctx: *mut c_void,
    ) -> bool;
    pub fn lowpInstallBadAllocHandler(handler: extern "C" fn(*const c_char));
    pub fn lowpOptMain(
        argc: c_int,
        argv: *mut *mut c_char,
        arm_signals: Option<extern "C" fn()>,
    ) -> c_int;
    pub fn lowpRegisterAllDialects(registry: MlirDialectRegistry);
    pub fn lowpRegisterAllUpstreamPasses();
}
