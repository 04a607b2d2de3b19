//! Scaled-matmul problems for the driver: a [`MatmulSpec`] (`lowp_formats::problem`: sizes,
//! formats, layouts, inputs, the oracle check) builds its IR through the dialect's op
//! builders and runs JIT-compiled ([`MatmulIr`]). `lowp-run --gen` and files with a
//! `lowp.scaled_matmul` entry both go through here.

pub use lowp_formats::problem::{
    available_memory, bf16_from, f32_from, CheckReport, MatmulInputs, MatmulSpec, Role,
};

use std::time::Instant;

use lowp_formats::problem::ROLES;
use lowp_formats::{QuantizedTensor, ScaleDtype, ScaleLayout};
use melior::ir::attribute::{StringAttribute, TypeAttribute};
use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::r#type::{FunctionType, MemRefType};
use melior::ir::{
    Block, BlockLike, Location, Module, OperationRef, Region, RegionLike, ShapedTypeLike, Type,
    TypeLike, ValueLike,
};
use melior::Context;

use crate::{Jit, JitError, MemRefArg};

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

/// The shape of a memref type (`None`: a dynamic size) and its element type.
fn shape_of(t: Type<'_>) -> Result<(Vec<Option<usize>>, Type<'_>), String> {
    let m = MemRefType::try_from(t).map_err(|_| format!("{t} is not a memref"))?;
    // SAFETY: reading a live shaped type.
    let dims = unsafe {
        let raw = t.to_raw();
        (0..mlir_sys::mlirShapedTypeGetRank(raw))
            .map(|i| {
                (!mlir_sys::mlirShapedTypeIsDynamicDim(raw, i as isize))
                    .then(|| mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize) as usize)
            })
            .collect()
    };
    Ok((dims, m.element()))
}

/// Sizes for an entry's dynamic dimensions (`lowp-run FILE --m M --n N --k K`): each gives
/// the size where the entry's types leave it open, and must agree where they fix it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GivenSizes {
    /// Rows of A and C.
    pub m: Option<usize>,
    /// Rows of B, columns of C.
    pub n: Option<usize>,
    /// The reduction length (logical: two codes a byte in packed storage).
    pub k: Option<usize>,
}

/// Which sizes of a generated entry's types are dynamic (`?`): `lowp-run --gen --dynamic`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DynamicSizes {
    /// M: rows of A, of C, and of A's scales where they follow the rows.
    pub m: bool,
    /// N: rows of B, columns of C, the bias, and B's scale rows where they follow them.
    pub n: bool,
    /// K: columns of A and B, and the scale columns of K-blocked layouts.
    pub k: bool,
}

/// One of M, N, K: the size the flag `flag` gives, else the one the types fix (`seen`:
/// what each place of the entry says, `None` where it is dynamic).
fn settle(
    entry: &str,
    name: &str,
    flag: &str,
    given: Option<usize>,
    seen: &[(&str, Option<usize>)],
) -> Result<usize, String> {
    let fixed = seen.iter().find_map(|(what, v)| v.map(|v| (*what, v)));
    match (given, fixed) {
        (Some(g), Some((what, v))) if g != v => Err(format!(
            "{flag} {g}, but {what} of @{entry}'s lowp.scaled_matmul fixes {name} = {v}"
        )),
        (Some(g), _) => Ok(g),
        (None, Some((_, v))) => Ok(v),
        (None, None) => Err(format!(
            "{name} of @{entry}'s lowp.scaled_matmul is dynamic ({}): give it with {flag}",
            seen.iter()
                .map(|(what, _)| *what)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
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

/// The IR of a [`MatmulSpec`] and the JIT-compiled function's runs: what `lowp-run` and the
/// GPU path add to the problem `lowp-formats` states.
pub trait MatmulIr: Sized {
    /// A module with `func.func @<name>` holding one `lowp.scaled_matmul`, built with the
    /// dialect's op builders.
    fn build_module<'c>(&self, ctx: &'c Context, name: &str) -> Module<'c>;

    /// [`build_module`](Self::build_module) with the sizes `dynamic` names left dynamic
    /// (`?`) in the entry's types: the call passes them in the memref descriptors.
    fn build_module_dynamic<'c>(
        &self,
        ctx: &'c Context,
        name: &str,
        dynamic: DynamicSizes,
    ) -> Module<'c>;

    /// The spec of an entry holding one `lowp.scaled_matmul` with static shapes, and the role
    /// of each of its arguments.
    fn from_entry(module: &Module, entry: &str) -> Result<(Self, Vec<Role>), String> {
        Self::from_entry_with(module, entry, GivenSizes::default())
    }

    /// [`from_entry`](Self::from_entry) for an entry whose types may leave M, N or K
    /// dynamic: `given` supplies them (and must agree with the sizes the types fix). Every
    /// size of every operand is checked against the problem, so that a call with these
    /// sizes passes the entry's `lowp-assert-shapes` checks.
    fn from_entry_with(
        module: &Module,
        entry: &str,
        given: GivenSizes,
    ) -> Result<(Self, Vec<Role>), String>;

    /// Call the entry once; the result as f32.
    fn run(
        &self,
        jit: &Jit,
        entry: &str,
        roles: &[Role],
        inputs: &MatmulInputs,
    ) -> Result<Vec<f32>, JitError>;

    /// Run the entry `runs` times (after one warm-up) and report the median.
    fn bench(
        &self,
        jit: &Jit,
        entry: &str,
        roles: &[Role],
        inputs: &MatmulInputs,
        runs: usize,
    ) -> Result<BenchReport, JitError>;
}

impl MatmulIr for MatmulSpec {
    /// A module with `func.func @<name>` holding one `lowp.scaled_matmul`, built with the
    /// dialect's op builders.
    fn build_module<'c>(&self, ctx: &'c Context, name: &str) -> Module<'c> {
        self.build_module_dynamic(ctx, name, DynamicSizes::default())
    }

    fn build_module_dynamic<'c>(
        &self,
        ctx: &'c Context,
        name: &str,
        dynamic: DynamicSizes,
    ) -> Module<'c> {
        // Diagnostics on the generated ops name the problem instead of `loc(unknown)`.
        let loc = Location::new(
            ctx,
            &format!(
                "<generated {}x{}x{} {} x {}>",
                self.m, self.n, self.k, self.lhs, self.rhs
            ),
            1,
            1,
        );
        let out_el = if self.bf16 {
            Type::bfloat16(ctx)
        } else {
            Type::float32(ctx)
        };
        let types: Vec<Type> = self
            .roles()
            .into_iter()
            .map(|r| {
                let element = match r {
                    Role::Lhs | Role::Rhs => {
                        let (f, packed) = if r == Role::Lhs {
                            (self.lhs, self.lhs_packed)
                        } else {
                            (self.rhs, self.rhs_packed)
                        };
                        if packed {
                            lowp_dialect::packed_type(ctx, f).expect("validated spec")
                        } else {
                            lowp_dialect::format_type(ctx, f)
                        }
                    }
                    Role::LhsScales => dtype_type(ctx, self.lhs_layout.scale_dtype()),
                    Role::RhsScales => dtype_type(ctx, self.rhs_layout.scale_dtype()),
                    Role::LhsGlobal | Role::RhsGlobal | Role::Bias => Type::float32(ctx),
                    Role::Out => out_el,
                };
                let dims: Vec<i64> = self
                    .operand_shape(r)
                    .iter()
                    .zip(self.operand_sizes(r))
                    .map(|(&d, size)| match size {
                        Some(b'm') if dynamic.m => i64::MIN,
                        Some(b'n') if dynamic.n => i64::MIN,
                        Some(b'k') if dynamic.k => i64::MIN,
                        _ => d as i64,
                    })
                    .collect();
                MemRefType::new(element, &dims, None, None).into()
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
    /// operands from the function's arguments (sizes its types leave dynamic from `given`).
    /// Returns the spec and the role of each argument.
    fn from_entry_with(
        module: &Module,
        entry: &str,
        given: GivenSizes,
    ) -> Result<(Self, Vec<Role>), String> {
        let func = crate::find_function(module, entry)
            .ok_or_else(|| format!("no function @{entry} in the module"))?;
        crate::entry_type(func, entry)?;
        // The one scaled_matmul directly in the entry's region.
        let func_raw = func.to_raw().ptr;
        let mut found = Vec::new();
        func.walk(WalkOrder::PreOrder, |op| {
            if op.name().as_string_ref().as_str() == Ok("lowp.scaled_matmul")
                && op.parent_operation().map(|p| p.to_raw().ptr) == Some(func_raw)
            {
                found.push(op.to_raw());
            }
            WalkResult::Advance
        });
        let mm = match found[..] {
            [one] => one,
            [] => {
                return Err(format!(
                    "@{entry} has no lowp.scaled_matmul at its top level (needed for --check, \
                     input files and --target cuda)"
                ))
            }
            _ => {
                return Err(format!(
                    "@{entry} has {} lowp.scaled_matmul ops at its top level; --check, input \
                     files and --target cuda take an entry with one",
                    found.len()
                ))
            }
        };
        // SAFETY: a live op of the module found by the walk above.
        let mm = unsafe { OperationRef::from_raw(mm) };
        let body = func
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| format!("@{entry} is a declaration"))?;
        // The oracle computes the op from the inputs as given: nothing else in the entry
        // may write them or the result, before or after it (constants and the return
        // aside).
        let mut op = body.first_operation();
        while let Some(o) = op {
            let name = o.name();
            let name = name.as_string_ref().as_str().unwrap_or("");
            let pure = name.starts_with("arith.") && o.region_count() == 0;
            if o.to_raw().ptr != mm.to_raw().ptr && !pure && name != "func.return" {
                return Err(format!(
                    "@{entry} holds '{name}' beside its lowp.scaled_matmul; --check, input \
                     files and --target cuda run the op alone, from its arguments (an entry \
                     of the op, constants and the return)"
                ));
            }
            op = o.next_in_block();
        }
        let sizes = mm
            .attribute("operandSegmentSizes")
            .map_err(|_| "scaled_matmul without operandSegmentSizes".to_string())?;
        let present: Vec<bool> = lowp_passes::ir::dense_i32s(sizes)
            .filter(|s| s.len() == 8)
            .ok_or("scaled_matmul's operandSegmentSizes is not 8 x i32")?
            .iter()
            .map(|&s| s == 1)
            .collect();
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
            crate::memref::dense_row_major(v.r#type()).map_err(|why| {
                format!("operand {role:?} of @{entry}'s lowp.scaled_matmul: {why}")
            })?;
            match position {
                Some(a) => {
                    if let Some(first) = roles[a] {
                        return Err(format!(
                            "argument #{a} of @{entry} is both {first:?} and {role:?} of its \
                             lowp.scaled_matmul; lowp-run gives each operand its own inputs \
                             (pass two arguments)"
                        ));
                    }
                    roles[a] = Some(role)
                }
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
        // Each operand's sizes (`None`: dynamic) and element type, read once.
        let shapes: Vec<(Role, Vec<Option<usize>>, Type)> = operand_types
            .iter()
            .map(|&(role, t)| shape_of(t).map(|(dims, el)| (role, dims, el)))
            .collect::<Result<_, _>>()?;
        let shape = |role: Role| {
            shapes
                .iter()
                .find(|(r, _, _)| *r == role)
                .map(|(_, dims, el)| (dims.clone(), *el))
        };
        let (ashape, ael) = shape(Role::Lhs).expect("lhs");
        let (bshape, bel) = shape(Role::Rhs).expect("rhs");
        let (oshape, oel) = shape(Role::Out).expect("out");
        let ai = lowp_dialect::code_type_info(ael).ok_or("lhs has no lowp format")?;
        let bi = lowp_dialect::code_type_info(bel).ok_or("rhs has no lowp format")?;
        let layout = |name: &str| {
            mm.attribute(name)
                .ok()
                .and_then(lowp_dialect::layout_of)
                .ok_or_else(|| format!("missing {name}"))
        };
        // M, N, K: from the types where they fix them, else from `given`.
        let bias_len = shape(Role::Bias).and_then(|(dims, _)| dims[0]);
        let logical_k = |cols: Option<usize>, packed: bool| cols.map(|c| c * (1 + packed as usize));
        let m = settle(
            entry,
            "M",
            "--m",
            given.m,
            &[("lhs's rows", ashape[0]), ("the result's rows", oshape[0])],
        )?;
        let n = settle(
            entry,
            "N",
            "--n",
            given.n,
            &[
                ("rhs's rows", bshape[0]),
                ("the result's columns", oshape[1]),
                ("the bias's length", bias_len),
            ],
        )?;
        let k = settle(
            entry,
            "K",
            "--k",
            given.k,
            &[
                ("lhs's columns", logical_k(ashape[1], ai.packed)),
                ("rhs's columns", logical_k(bshape[1], bi.packed)),
            ],
        )?;
        let spec = MatmulSpec {
            m,
            n,
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
        // Every size of every operand, static or not, as the problem makes it: the call
        // passes these shapes, and the entry's checks (lowp-assert-shapes) would stop a
        // call whose dynamic sizes disagree with its static ones.
        for (&(role, t), (_, dims, _)) in operand_types.iter().zip(&shapes) {
            let want = spec.operand_shape(role);
            let agrees = dims.len() == want.len()
                && dims
                    .iter()
                    .zip(&want)
                    .all(|(d, w)| d.is_none_or(|d| d == *w));
            if !agrees {
                let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
                return Err(format!(
                    "operand {role:?} of @{entry}'s lowp.scaled_matmul is {t}, but a {m}x{n}x{k} \
                     problem makes it {}",
                    if want.is_empty() {
                        "a scalar".to_string()
                    } else {
                        want.join("x")
                    }
                ));
            }
        }
        Ok((spec, roles))
    }

    /// Call the entry once; the result as f32.
    fn run(
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

    /// Run the entry `runs` times (after one warm-up) and report the median.
    fn bench(
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

/// The shapes of a spec's operands.
trait OperandShapes {
    /// The shape of the operand `role` takes.
    fn operand_shape(&self, role: Role) -> Vec<usize>;
    /// For each dimension of [`operand_shape`](Self::operand_shape), the size it follows:
    /// `b'm'`, `b'n'`, `b'k'`, or `None` (a constant 1 of per-tensor scales, of scale
    /// columns that do not split K).
    fn operand_sizes(&self, role: Role) -> Vec<Option<u8>>;
}

impl OperandShapes for MatmulSpec {
    fn operand_shape(&self, role: Role) -> Vec<usize> {
        let cols = |packed: bool| if packed { self.k / 2 } else { self.k };
        let pair = |(r, c): (usize, usize)| vec![r, c];
        match role {
            Role::Lhs => vec![self.m, cols(self.lhs_packed)],
            Role::Rhs => vec![self.n, cols(self.rhs_packed)],
            Role::LhsScales => pair(self.lhs_layout.scale_shape(self.m, self.k)),
            Role::RhsScales => pair(self.rhs_layout.scale_shape(self.n, self.k)),
            Role::LhsGlobal | Role::RhsGlobal => vec![],
            Role::Bias => vec![self.n],
            Role::Out => vec![self.m, self.n],
        }
    }

    fn operand_sizes(&self, role: Role) -> Vec<Option<u8>> {
        let scales = |layout: ScaleLayout, rows: u8| {
            vec![
                (layout != ScaleLayout::PerTensor).then_some(rows),
                layout.is_k_blocked().then_some(b'k'),
            ]
        };
        match role {
            Role::Lhs => vec![Some(b'm'), Some(b'k')],
            Role::Rhs => vec![Some(b'n'), Some(b'k')],
            Role::LhsScales => scales(self.lhs_layout, b'm'),
            Role::RhsScales => scales(self.rhs_layout, b'n'),
            Role::LhsGlobal | Role::RhsGlobal => vec![],
            Role::Bias => vec![Some(b'n')],
            Role::Out => vec![Some(b'm'), Some(b'n')],
        }
    }
}

/// The argument buffers of one call.
trait CallBuffers {
    fn buffers(&self, inputs: &MatmulInputs) -> Buffers;
    fn args<'b>(&self, roles: &[Role], buf: &'b mut Buffers) -> Vec<MemRefArg<'b>>;
}

impl CallBuffers for MatmulSpec {
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
        let scales = |pair: (&'b mut Vec<u8>, &'b mut Vec<f32>), shape: &[usize]| {
            if pair.0.is_empty() {
                MemRefArg::new(pair.1.as_mut_slice(), shape)
            } else {
                MemRefArg::new(pair.0.as_mut_slice(), shape)
            }
        };
        let taken = "each role appears once";
        roles
            .iter()
            .map(|&r| {
                let shape = self.operand_shape(r);
                match r {
                    Role::Lhs => MemRefArg::new(a.take().expect(taken).as_mut_slice(), &shape),
                    Role::LhsScales => scales(sa.take().expect(taken), &shape),
                    Role::LhsGlobal => MemRefArg::scalar(ga.take().expect(taken)),
                    Role::Rhs => MemRefArg::new(b.take().expect(taken).as_mut_slice(), &shape),
                    Role::RhsScales => scales(sb.take().expect(taken), &shape),
                    Role::RhsGlobal => MemRefArg::scalar(gb.take().expect(taken)),
                    Role::Bias => MemRefArg::new(bias.take().expect(taken).as_mut_slice(), &shape),
                    Role::Out => {
                        let (o32, o16) = out.take().expect(taken);
                        if self.bf16 {
                            MemRefArg::new(o16.as_mut_slice(), &shape)
                        } else {
                            MemRefArg::new(o32.as_mut_slice(), &shape)
                        }
                    }
                }
            })
            .collect()
    }
}
