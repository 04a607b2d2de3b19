//! Scaled-matmul problems for the driver: a [`MatmulSpec`] (sizes, formats, layouts) builds
//! the IR through the dialect's op builders, random inputs through `lowp-formats`, and runs
//! and checks the JIT-compiled function against the oracle. `lowp-run --gen` and files with
//! a `lowp.scaled_matmul` entry both go through here.

use std::time::Instant;

use lowp_formats::testing::SplitMix64;
use lowp_formats::{
    quantize, scaled_matmul_f64, ErrorStats, QuantizeOptions, QuantizedTensor, ScaleDtype,
    ScaleLayout, ScaledFormat,
};
use melior::ir::attribute::{StringAttribute, TypeAttribute};
use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::r#type::{FunctionType, MemRefType};
use melior::ir::{
    Block, BlockLike, Location, Module, OperationRef, Region, RegionLike, ShapedTypeLike, Type,
    TypeLike, ValueLike,
};
use melior::Context;

use crate::{Jit, JitError, MemRefArg};

/// What one argument of a scaled-matmul entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A's codes.
    Lhs,
    /// A's scales.
    LhsScales,
    /// A's NVFP4 global scale.
    LhsGlobal,
    /// B's codes.
    Rhs,
    /// B's scales.
    RhsScales,
    /// B's NVFP4 global scale.
    RhsGlobal,
    /// The bias.
    Bias,
    /// The result.
    Out,
}

const ROLES: [Role; 8] = [
    Role::Lhs,
    Role::LhsScales,
    Role::LhsGlobal,
    Role::Rhs,
    Role::RhsScales,
    Role::RhsGlobal,
    Role::Bias,
    Role::Out,
];

/// A scaled matmul `M x K` by `N x K` with its formats and layouts.
#[derive(Clone, Debug, PartialEq)]
pub struct MatmulSpec {
    /// M.
    pub m: usize,
    /// N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// A's format.
    pub lhs: ScaledFormat,
    /// B's format.
    pub rhs: ScaledFormat,
    /// A's scale layout.
    pub lhs_layout: ScaleLayout,
    /// B's scale layout.
    pub rhs_layout: ScaleLayout,
    /// A's codes packed two per byte (4-bit formats).
    pub lhs_packed: bool,
    /// B's codes packed two per byte.
    pub rhs_packed: bool,
    /// Add a bias of N values.
    pub bias: bool,
    /// Store the result as bf16.
    pub bf16: bool,
}

/// Random inputs of a [`MatmulSpec`], quantized by `lowp-formats`.
pub struct MatmulInputs {
    /// A.
    pub a: QuantizedTensor,
    /// B.
    pub b: QuantizedTensor,
    /// Bias.
    pub bias: Option<Vec<f32>>,
}

/// File names of the operands in an inputs directory (`--inputs DIR`).
const INPUT_FILES: [(Role, &str); 7] = [
    (Role::Lhs, "a.bin"),
    (Role::LhsScales, "sa.bin"),
    (Role::LhsGlobal, "ga.bin"),
    (Role::Rhs, "b.bin"),
    (Role::RhsScales, "sb.bin"),
    (Role::RhsGlobal, "gb.bin"),
    (Role::Bias, "bias.bin"),
];

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian f32 values.
pub(crate) fn f32_from(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Little-endian bf16 values, widened to f32 exactly.
pub(crate) fn bf16_from(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16))
        .collect()
}

impl MatmulInputs {
    /// The raw bytes of one operand as the entry takes it: codes one per byte (two for
    /// packed FP4), one-byte scales for E8M0 / UE4M3, little-endian f32 otherwise.
    fn bytes(&self, role: Role) -> Option<Vec<u8>> {
        let scales = |q: &QuantizedTensor| {
            q.scale_bytes()
                .unwrap_or_else(|| f32_bytes(&q.scales.values))
        };
        match role {
            Role::Lhs => Some(self.a.codes.clone()),
            Role::LhsScales => Some(scales(&self.a)),
            Role::LhsGlobal => self.a.scales.global.map(|g| g.to_le_bytes().to_vec()),
            Role::Rhs => Some(self.b.codes.clone()),
            Role::RhsScales => Some(scales(&self.b)),
            Role::RhsGlobal => self.b.scales.global.map(|g| g.to_le_bytes().to_vec()),
            Role::Bias => self.bias.as_ref().map(|b| f32_bytes(b)),
            Role::Out => None,
        }
    }

    /// Write the operands into `dir` (`a.bin`, `sa.bin`, `ga.bin`, `b.bin`, `sb.bin`,
    /// `gb.bin`, `bias.bin`, those the problem has).
    pub fn save(&self, dir: &std::path::Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
        for (role, name) in INPUT_FILES {
            if let Some(bytes) = self.bytes(role) {
                let path = dir.join(name);
                std::fs::write(&path, bytes)
                    .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
            }
        }
        Ok(())
    }

    /// Read the operands of `spec` from `dir` (the layout [`save`](Self::save) writes). Each
    /// file must hold exactly the bytes the operand's memref has.
    pub fn load(spec: &MatmulSpec, dir: &std::path::Path) -> Result<Self, String> {
        let read = |name: &str, len: usize| -> Result<Vec<u8>, String> {
            let path = dir.join(name);
            let bytes = std::fs::read(&path)
                .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
            if bytes.len() != len {
                return Err(format!(
                    "'{}' holds {} bytes, the operand needs {len}",
                    path.display(),
                    bytes.len()
                ));
            }
            Ok(bytes)
        };
        let tensor = |codes: &str,
                      scales: &str,
                      global: &str,
                      rows: usize,
                      f: ScaledFormat,
                      l: ScaleLayout,
                      packed: bool|
         -> Result<QuantizedTensor, String> {
            let code_len = rows * if packed { spec.k.div_ceil(2) } else { spec.k };
            let codes = read(codes, code_len)?;
            let n = l.scale_count(rows, spec.k);
            let dtype = l.scale_dtype();
            let values = match dtype {
                ScaleDtype::UE8M0 | ScaleDtype::UE4M3 => read(scales, n)?
                    .iter()
                    .map(|&b| dtype.decode_byte(b).expect("one-byte dtype"))
                    .collect(),
                _ => f32_from(&read(scales, 4 * n)?),
            };
            let global = if l.has_global() {
                Some(f32_from(&read(global, 4)?)[0])
            } else {
                None
            };
            Ok(QuantizedTensor {
                format: f,
                layout: l,
                rows,
                cols: spec.k,
                packed,
                codes,
                scales: lowp_formats::Scales { values, global },
            })
        };
        let a = tensor(
            "a.bin",
            "sa.bin",
            "ga.bin",
            spec.m,
            spec.lhs,
            spec.lhs_layout,
            spec.lhs_packed,
        )?;
        let b = tensor(
            "b.bin",
            "sb.bin",
            "gb.bin",
            spec.n,
            spec.rhs,
            spec.rhs_layout,
            spec.rhs_packed,
        )?;
        let bias = if spec.bias {
            Some(f32_from(&read("bias.bin", 4 * spec.n)?))
        } else {
            None
        };
        Ok(Self { a, b, bias })
    }

    /// Put special values into the operands (where the formats have them): +inf in A[0][0]
    /// against a zero in B[1][0] (inf * 0 = NaN in out[0][1]), a NaN code in A[1][1], the
    /// largest finite magnitudes elsewhere, and a NaN block scale in B when B has several.
    pub fn inject_specials(&mut self) {
        fn set(q: &mut QuantizedTensor, r: usize, c: usize, code: u8) {
            if r >= q.rows || c >= q.cols {
                return;
            }
            if q.packed {
                let i = r * q.cols.div_ceil(2) + c / 2;
                let byte = &mut q.codes[i];
                *byte = if c % 2 == 0 {
                    (*byte & 0xF0) | code
                } else {
                    (*byte & 0x0F) | code << 4
                };
            } else {
                q.codes[r * q.cols + c] = code;
            }
        }
        let (fa, fb) = (self.a.format, self.b.format);
        let inf = |f: ScaledFormat| {
            if f.has_inf() {
                f.max_finite_code() + 1
            } else {
                f.max_finite_code()
            }
        };
        set(&mut self.a, 0, 0, inf(fa));
        set(&mut self.b, 1, 0, 0);
        if fa.has_nan() {
            let nan = if fa.is_fnuz() { 0x80 } else { 0x7F };
            set(&mut self.a, 1, 1, nan);
        }
        set(&mut self.a, 2, 2, fa.max_finite_code() | fa.sign_mask());
        set(&mut self.b, 2, 3, fb.max_finite_code());
        if self.b.scales.values.len() > 1 {
            self.b.scales.values[1] = f32::NAN;
        }
    }
}

/// A check against the oracle.
#[derive(Clone, Copy, Debug)]
pub struct CheckReport {
    /// Error statistics (f32 results; for bf16 with the bf16 rounding allowed for).
    pub stats: ErrorStats,
    /// Whether every output is within its bound.
    pub passed: bool,
}

/// Timings of repeated runs.
#[derive(Clone, Copy, Debug)]
pub struct BenchReport {
    /// Median wall time of one call, milliseconds.
    pub median_ms: f64,
    /// `2 M N K / median`, GFLOP/s.
    pub gflops: f64,
}

fn dtype_type(ctx: &Context, dtype: ScaleDtype) -> Type<'_> {
    match dtype {
        ScaleDtype::UE8M0 => Type::float8_e8m0fnu(ctx),
        ScaleDtype::UE4M3 => Type::float8_e4m3fn(ctx),
        ScaleDtype::BF16 => Type::bfloat16(ctx),
        ScaleDtype::F16 => Type::float16(ctx),
        ScaleDtype::F32 => Type::float32(ctx),
    }
}

impl MatmulSpec {
    /// Check that the dialect accepts this problem; the error says why not.
    pub fn validate(&self) -> Result<(), String> {
        for (what, f, l, packed) in [
            ("lhs", self.lhs, self.lhs_layout, self.lhs_packed),
            ("rhs", self.rhs, self.rhs_layout, self.rhs_packed),
        ] {
            l.validate().map_err(|e| format!("{what}: {e}"))?;
            if matches!(l, ScaleLayout::Nvfp4 { .. }) && f.bit_width() != 4 {
                return Err(format!(
                    "{what}: layout {l} scales 4-bit formats, {f} has {} bits",
                    f.bit_width()
                ));
            }
            if matches!(l, ScaleLayout::Mx { .. } | ScaleLayout::Nvfp4 { .. }) && f.is_fnuz() {
                return Err(format!(
                    "{what}: layout {l} scales OCP formats, {f} is FNUZ"
                ));
            }
            if packed && f.bit_width() != 4 {
                return Err(format!(
                    "{what}: --packed needs a 4-bit format, {f} has {} bits",
                    f.bit_width()
                ));
            }
        }
        if (self.lhs_packed || self.rhs_packed) && self.k % 2 == 1 {
            return Err(format!("packed operands need an even K, found {}", self.k));
        }
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return Err(format!(
                "sizes must be at least 1, found {}x{}x{}",
                self.m, self.n, self.k
            ));
        }
        let need = self.bytes_needed();
        let available = available_memory();
        if need > available {
            return Err(format!(
                "a {}x{}x{} problem needs about {:.1} GiB (inputs, codes, kernel workspace, \
                 oracle); this machine has {:.1} GiB available",
                self.m,
                self.n,
                self.k,
                need as f64 / (1u64 << 30) as f64,
                available as f64 / (1u64 << 30) as f64
            ));
        }
        Ok(())
    }

    /// A generous estimate of the memory one run takes: f32 inputs and their codes, the
    /// kernel's decoded operands and f32 workspace, the result and the f64 oracle.
    pub fn bytes_needed(&self) -> u64 {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let operands = (m + n).saturating_mul(k);
        operands
            .saturating_mul(4 + 1 + 4)
            .saturating_add(m.saturating_mul(n).saturating_mul(4 + 4 + 16))
    }

    /// `2 M N K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The arguments of the entry, in order.
    pub fn roles(&self) -> Vec<Role> {
        ROLES
            .into_iter()
            .filter(|r| match r {
                Role::LhsGlobal => self.lhs_layout.has_global(),
                Role::RhsGlobal => self.rhs_layout.has_global(),
                Role::Bias => self.bias,
                _ => true,
            })
            .collect()
    }

    /// Seeded random inputs: normal values with a few large rows, quantized.
    pub fn inputs(&self, seed: u64) -> MatmulInputs {
        let mut rng = SplitMix64::new(seed);
        let mut tensor = |rows: usize, f: ScaledFormat, l: ScaleLayout, packed: bool| {
            let data: Vec<f32> = (0..rows * self.k)
                .map(|i| rng.normal() * if (i / self.k) % 7 == 3 { 8.0 } else { 1.0 })
                .collect();
            quantize(
                &data,
                rows,
                self.k,
                f,
                l,
                QuantizeOptions {
                    packed,
                    ..Default::default()
                },
            )
            .expect("validated spec")
        };
        let a = tensor(self.m, self.lhs, self.lhs_layout, self.lhs_packed);
        let b = tensor(self.n, self.rhs, self.rhs_layout, self.rhs_packed);
        let bias = self.bias.then(|| rng.normal_vec(self.n));
        MatmulInputs { a, b, bias }
    }

    fn codes_type<'c>(
        &self,
        ctx: &'c Context,
        rows: usize,
        f: ScaledFormat,
        packed: bool,
    ) -> Type<'c> {
        let (element, cols) = if packed {
            (
                lowp_dialect::packed_type(ctx, f).expect("validated spec"),
                self.k / 2,
            )
        } else {
            (lowp_dialect::format_type(ctx, f), self.k)
        };
        MemRefType::new(element, &[rows as i64, cols as i64], None, None).into()
    }

    fn scales_type<'c>(&self, ctx: &'c Context, rows: usize, l: ScaleLayout) -> Type<'c> {
        let (r, c) = l.scale_shape(rows, self.k);
        MemRefType::new(
            dtype_type(ctx, l.scale_dtype()),
            &[r as i64, c as i64],
            None,
            None,
        )
        .into()
    }

    /// A module with `func.func @<name>` holding one `lowp.scaled_matmul`, built with the
    /// dialect's op builders.
    pub fn build_module<'c>(&self, ctx: &'c Context, name: &str) -> Module<'c> {
        let loc = Location::unknown(ctx);
        let f32t = Type::float32(ctx);
        let scalar: Type = MemRefType::new(f32t, &[], None, None).into();
        let out_el = if self.bf16 { Type::bfloat16(ctx) } else { f32t };
        let types: Vec<Type> = self
            .roles()
            .into_iter()
            .map(|r| match r {
                Role::Lhs => self.codes_type(ctx, self.m, self.lhs, self.lhs_packed),
                Role::LhsScales => self.scales_type(ctx, self.m, self.lhs_layout),
                Role::Rhs => self.codes_type(ctx, self.n, self.rhs, self.rhs_packed),
                Role::RhsScales => self.scales_type(ctx, self.n, self.rhs_layout),
                Role::LhsGlobal | Role::RhsGlobal => scalar,
                Role::Bias => MemRefType::new(f32t, &[self.n as i64], None, None).into(),
                Role::Out => {
                    MemRefType::new(out_el, &[self.m as i64, self.n as i64], None, None).into()
                }
            })
            .collect();
        let block = Block::new(&types.iter().map(|t| (*t, loc)).collect::<Vec<_>>());
        let roles = self.roles();
        let arg = |role: Role| {
            roles
                .iter()
                .position(|r| *r == role)
                .map(|i| block.argument(i).expect("argument").into())
        };
        let op = lowp_dialect::scaled_matmul(
            ctx,
            lowp_dialect::ScaledMatmulOperands {
                lhs: arg(Role::Lhs).expect("lhs"),
                lhs_scales: arg(Role::LhsScales).expect("lhs scales"),
                lhs_global: arg(Role::LhsGlobal),
                rhs: arg(Role::Rhs).expect("rhs"),
                rhs_scales: arg(Role::RhsScales).expect("rhs scales"),
                rhs_global: arg(Role::RhsGlobal),
                bias: arg(Role::Bias),
                out: arg(Role::Out).expect("out"),
                lhs_layout: self.lhs_layout,
                rhs_layout: self.rhs_layout,
            },
            loc,
        )
        .expect("validated spec");
        block.append_operation(op);
        block.append_operation(melior::dialect::func::r#return(&[], loc));
        let region = Region::new();
        region.append_block(block);
        let func = melior::dialect::func::func(
            ctx,
            StringAttribute::new(ctx, name),
            TypeAttribute::new(FunctionType::new(ctx, &types, &[]).into()),
            region,
            &[],
            loc,
        );
        let module = Module::new(loc);
        module.body().append_operation(func);
        module
    }

    /// Read the problem off an entry function whose `lowp.scaled_matmul` takes all its
    /// operands from the function's arguments (static shapes). Returns the spec and the role
    /// of each argument.
    pub fn from_entry(module: &Module, entry: &str) -> Result<(Self, Vec<Role>), String> {
        let func = crate::find_function(module, entry)
            .ok_or_else(|| format!("no function @{entry} in the module"))?;
        // The first scaled_matmul directly in the entry's region.
        let func_raw = func.to_raw().ptr;
        let mut found = None;
        func.walk(WalkOrder::PreOrder, |op| {
            if found.is_none()
                && op.name().as_string_ref().as_str() == Ok("lowp.scaled_matmul")
                && op.parent_operation().map(|p| p.to_raw().ptr) == Some(func_raw)
            {
                found = Some(op.to_raw());
            }
            WalkResult::Advance
        });
        let mm = found.ok_or_else(|| {
            format!("@{entry} has no lowp.scaled_matmul at its top level (needed for --check and input files)")
        })?;
        // SAFETY: a live op of the module found by the walk above.
        let mm = unsafe { OperationRef::from_raw(mm) };
        let body = func
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| format!("@{entry} is a declaration"))?;
        let sizes = mm
            .attribute("operandSegmentSizes")
            .map_err(|_| "scaled_matmul without operandSegmentSizes".to_string())?;
        let present: Vec<bool> = {
            let raw = melior::ir::AttributeLike::to_raw(&sizes);
            // SAFETY: an 8-element dense i32 array on a verified op.
            (0..8)
                .map(|i| unsafe { mlir_sys::mlirDenseI32ArrayGetElement(raw, i) } == 1)
                .collect()
        };
        let mut roles = vec![None; body.argument_count()];
        let mut next = 0;
        let mut operand_types = Vec::new();
        for (i, role) in ROLES.into_iter().enumerate() {
            if !present[i] {
                continue;
            }
            let v = mm.operand(next).map_err(|e| e.to_string())?;
            next += 1;
            operand_types.push((role, v.r#type()));
            let position = (0..body.argument_count()).find(|&a| {
                body.argument(a)
                    .is_ok_and(|b| melior::ir::Value::from(b) == v)
            });
            match position {
                Some(a) => roles[a] = Some(role),
                None => {
                    return Err(format!(
                    "operand {role:?} of @{entry}'s lowp.scaled_matmul is not a function argument"
                ))
                }
            }
        }
        let roles: Vec<Role> = roles
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.ok_or_else(|| {
                    format!("argument #{i} of @{entry} is not an operand of its lowp.scaled_matmul")
                })
            })
            .collect::<Result<_, _>>()?;
        let ty = |role: Role| {
            operand_types
                .iter()
                .find(|(r, _)| *r == role)
                .map(|(_, t)| *t)
        };
        let (ashape, ael) = static_shape(ty(Role::Lhs).expect("lhs"))?;
        let (bshape, bel) = static_shape(ty(Role::Rhs).expect("rhs"))?;
        let (_, oel) = static_shape(ty(Role::Out).expect("out"))?;
        let ai = lowp_dialect::code_type_info(ael).ok_or("lhs has no lowp format")?;
        let bi = lowp_dialect::code_type_info(bel).ok_or("rhs has no lowp format")?;
        let layout = |name: &str| {
            mm.attribute(name)
                .ok()
                .and_then(lowp_dialect::layout_of)
                .ok_or_else(|| format!("missing {name}"))
        };
        let k = ashape[1] as usize * if ai.packed { 2 } else { 1 };
        let spec = MatmulSpec {
            m: ashape[0] as usize,
            n: bshape[0] as usize,
            k,
            lhs: ai.format,
            rhs: bi.format,
            lhs_layout: layout("lhs_layout")?,
            rhs_layout: layout("rhs_layout")?,
            lhs_packed: ai.packed,
            rhs_packed: bi.packed,
            bias: present[6],
            // SAFETY: a predicate on a live type.
            bf16: unsafe { !mlir_sys::mlirTypeIsAF32(oel.to_raw()) },
        };
        Ok((spec, roles))
    }
}

fn static_shape(t: Type<'_>) -> Result<(Vec<i64>, Type<'_>), String> {
    let m = MemRefType::try_from(t).map_err(|_| format!("{t} is not a memref"))?;
    // SAFETY: reading a live shaped type.
    let dims: Vec<i64> = unsafe {
        let raw = t.to_raw();
        if !mlir_sys::mlirShapedTypeHasStaticShape(raw) {
            return Err(format!(
                "{t} has dynamic dimensions: give static shapes (or use --gen)"
            ));
        }
        (0..mlir_sys::mlirShapedTypeGetRank(raw))
            .map(|i| mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize))
            .collect()
    };
    Ok((dims, m.element()))
}

/// `MemAvailable` of /proc/meminfo, or 16 GiB where it cannot be read.
pub fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .map_or(16 << 30, |kib| kib * 1024)
}

/// Owned argument buffers of one call.
struct Buffers {
    a: Vec<u8>,
    b: Vec<u8>,
    sa8: Vec<u8>,
    sa32: Vec<f32>,
    sb8: Vec<u8>,
    sb32: Vec<f32>,
    ga: f32,
    gb: f32,
    bias: Vec<f32>,
    out32: Vec<f32>,
    out16: Vec<u16>,
}

impl MatmulSpec {
    /// The bytes of one argument as the entry reads them (codes, scale bytes or
    /// little-endian f32), for copying to a device. The result role is poisoned: 0xFF bytes,
    /// NaN in f32 and bf16, so an element the kernel does not write fails the check.
    pub fn role_bytes(&self, role: Role, inputs: &MatmulInputs) -> Vec<u8> {
        let scales = |q: &QuantizedTensor| {
            q.scale_bytes()
                .unwrap_or_else(|| f32_bytes(&q.scales.values))
        };
        match role {
            Role::Lhs => inputs.a.codes.clone(),
            Role::LhsScales => scales(&inputs.a),
            Role::LhsGlobal => f32_bytes(&[inputs.a.scales.global.unwrap_or(0.0)]),
            Role::Rhs => inputs.b.codes.clone(),
            Role::RhsScales => scales(&inputs.b),
            Role::RhsGlobal => f32_bytes(&[inputs.b.scales.global.unwrap_or(0.0)]),
            Role::Bias => f32_bytes(inputs.bias.as_deref().unwrap_or(&[])),
            Role::Out => vec![0xFF; self.m * self.n * if self.bf16 { 2 } else { 4 }],
        }
    }

    /// A result read back as bytes (f32 or bf16, little-endian) as f32 values.
    pub fn result_from_bytes(&self, bytes: &[u8]) -> Vec<f32> {
        if self.bf16 {
            bf16_from(bytes)
        } else {
            f32_from(bytes)
        }
    }

    fn buffers(&self, inputs: &MatmulInputs) -> Buffers {
        let split = |q: &QuantizedTensor| match q.scale_bytes() {
            Some(bytes) => (bytes, Vec::new()),
            None => (Vec::new(), q.scales.values.clone()),
        };
        let (sa8, sa32) = split(&inputs.a);
        let (sb8, sb32) = split(&inputs.b);
        Buffers {
            a: inputs.a.codes.clone(),
            b: inputs.b.codes.clone(),
            sa8,
            sa32,
            sb8,
            sb32,
            ga: inputs.a.scales.global.unwrap_or(0.0),
            gb: inputs.b.scales.global.unwrap_or(0.0),
            bias: inputs.bias.clone().unwrap_or_default(),
            out32: vec![0.0; self.m * self.n],
            out16: vec![0; self.m * self.n],
        }
    }

    fn args<'b>(&self, roles: &[Role], buf: &'b mut Buffers) -> Vec<MemRefArg<'b>> {
        let (a_cols, b_cols) = (
            if self.lhs_packed { self.k / 2 } else { self.k },
            if self.rhs_packed { self.k / 2 } else { self.k },
        );
        let (sar, sac) = self.lhs_layout.scale_shape(self.m, self.k);
        let (sbr, sbc) = self.rhs_layout.scale_shape(self.n, self.k);
        let Buffers {
            a,
            b,
            sa8,
            sa32,
            sb8,
            sb32,
            ga,
            gb,
            bias,
            out32,
            out16,
        } = buf;
        // Each buffer is lent to exactly one argument.
        let (mut a, mut b, mut ga, mut gb, mut bias) =
            (Some(a), Some(b), Some(ga), Some(gb), Some(bias));
        let (mut sa, mut sb) = (Some((sa8, sa32)), Some((sb8, sb32)));
        let mut out = Some((out32, out16));
        let scales = |pair: (&'b mut Vec<u8>, &'b mut Vec<f32>), r: usize, c: usize| {
            if pair.0.is_empty() {
                MemRefArg::new(pair.1.as_mut_slice(), &[r, c])
            } else {
                MemRefArg::new(pair.0.as_mut_slice(), &[r, c])
            }
        };
        let taken = "each role appears once";
        roles
            .iter()
            .map(|r| match r {
                Role::Lhs => {
                    MemRefArg::new(a.take().expect(taken).as_mut_slice(), &[self.m, a_cols])
                }
                Role::LhsScales => scales(sa.take().expect(taken), sar, sac),
                Role::LhsGlobal => MemRefArg::scalar(ga.take().expect(taken)),
                Role::Rhs => {
                    MemRefArg::new(b.take().expect(taken).as_mut_slice(), &[self.n, b_cols])
                }
                Role::RhsScales => scales(sb.take().expect(taken), sbr, sbc),
                Role::RhsGlobal => MemRefArg::scalar(gb.take().expect(taken)),
                Role::Bias => MemRefArg::new(bias.take().expect(taken).as_mut_slice(), &[self.n]),
                Role::Out => {
                    let (o32, o16) = out.take().expect(taken);
                    if self.bf16 {
                        MemRefArg::new(o16.as_mut_slice(), &[self.m, self.n])
                    } else {
                        MemRefArg::new(o32.as_mut_slice(), &[self.m, self.n])
                    }
                }
            })
            .collect()
    }

    /// Call the entry once; the result as f32.
    pub fn run(
        &self,
        jit: &Jit,
        entry: &str,
        roles: &[Role],
        inputs: &MatmulInputs,
    ) -> Result<Vec<f32>, JitError> {
        let mut buf = self.buffers(inputs);
        {
            let mut args = self.args(roles, &mut buf);
            // SAFETY: the buffers follow the entry's signature (built or read from it).
            unsafe { jit.call(entry, &mut args)? };
        }
        Ok(if self.bf16 {
            buf.out16
                .iter()
                .map(|&h| f32::from_bits((h as u32) << 16))
                .collect()
        } else {
            buf.out32
        })
    }

    /// Compare a result with the f64 oracle.
    pub fn check(&self, inputs: &MatmulInputs, got: &[f32]) -> CheckReport {
        let r = scaled_matmul_f64(
            &inputs.a.as_operand(),
            &inputs.b.as_operand(),
            inputs.bias.as_deref(),
        )
        .expect("validated spec");
        let mut stats = r.check(got, 1.0);
        if self.bf16 {
            // One bf16 rounding of the result on top of the f32 bound.
            let mut worst = 0f64;
            for (i, (&g, &w)) in got.iter().zip(&r.values).enumerate() {
                if g.is_finite() && w.is_finite() {
                    let bound = w.abs() * 2f64.powi(-8)
                        + r.magnitude[i] * (r.k as f64 + 5.0) * 2f64.powi(-24)
                        + f32::MIN_POSITIVE as f64;
                    worst = worst.max((g as f64 - w).abs() / bound);
                }
            }
            stats.max_bound_ratio = worst;
        }
        CheckReport {
            passed: stats.passed(),
            stats,
        }
    }

    /// Run the entry `runs` times (after one warm-up) and report the median.
    pub fn bench(
        &self,
        jit: &Jit,
        entry: &str,
        roles: &[Role],
        inputs: &MatmulInputs,
        runs: usize,
    ) -> Result<BenchReport, JitError> {
        let mut buf = self.buffers(inputs);
        let mut times = Vec::with_capacity(runs);
        for i in 0..=runs {
            let mut args = self.args(roles, &mut buf);
            let t = Instant::now();
            // SAFETY: as in `run`.
            unsafe { jit.call(entry, &mut args)? };
            if i > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        Ok(BenchReport {
            median_ms: median * 1e3,
            gflops: self.flops() / median / 1e9,
        })
    }
}
