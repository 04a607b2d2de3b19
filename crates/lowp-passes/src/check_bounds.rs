//! `lowp-check-bounds`: check at run time that host code's memref accesses stay inside
//! their memrefs. Before each access a `cf.assert` compares its indices with the sizes
//! (`memref.dim` where dynamic), its message naming the op, its location and the
//! dimension. Without it an index past a buffer writes into the heap, and a run ends in a
//! segmentation fault, or in none.
//!
//! Before:
//! ```mlir
//! memref.store %x, %a[%i] : memref<4xf32>
//! ```
//! After:
//! ```mlir
//! %c4 = arith.constant 4 : index
//! %0 = arith.cmpi ult, %i, %c4 : index
//! cf.assert %0, "memref.store at f.mlir:3:3: out of bounds along dimension 0 of memref<4xf32>"
//! memref.store %x, %a[%i] : memref<4xf32>
//! ```
//! What is checked:
//! - `memref.load`, `memref.store`, `memref.atomic_rmw`, `memref.generic_atomic_rmw`: each
//!   index below its dimension (compared unsigned: a negative index fails too);
//! - `vector.load`, `vector.store`: the same, and along the vector's dimensions (the
//!   memref's last ones) the index plus the vector's length within the dimension;
//! - `memref.subview`: along each dimension of a non-empty view, its first and last
//!   element (offset, and offset + (size - 1) x stride) inside the source;
//! - `memref.cast` to a static size, `memref.copy` between dynamic sizes: the sizes agree.
//!
//! Indices and sizes that constants decide and that are in bounds emit nothing: a module
//! of static, in-bounds accesses is left as it is. Views the source cannot describe
//! (`memref.reinterpret_cast`, `memref.view`) and the masked vector ops (`vector.maskedload`,
//! `vector.transfer_read`, which may read past a dimension by design) are not checked.
//! Host code only: an op inside `gpu.launch`, a `gpu.func` or a `gpu.module` is left
//! alone (device code has no `cf.assert` lowering on every target). Runs on any op; run it
//! before lowp's lowerings (`lowp-run` has the JIT run it first on the CPU), or it checks
//! the kernels' own accesses as well. On the CPU `lowp-report-asserts` makes a failed check
//! print `LOC: error: OP: what` and exit with status 1. No options.

use melior::dialect::arith::CmpiPredicate;
use melior::dialect::DialectHandle;
use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::{OperationRef, Type, TypeLike, Value, ValueLike};

use crate::expand_quantize::unsupported;
use crate::ir::{dense_i64s, enclosing, location_text, static_dim, static_index, Emitter};
use crate::registry::{PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-check-bounds",
    name: "LowpCheckBounds",
    description: "Check at run time (cf.assert) that host memref loads, stores, views, casts \
                  and copies stay inside their memrefs",
    op_name: None,
    options: &[],
    dependent_dialects: || {
        vec![
            DialectHandle::arith(),
            DialectHandle::cf(),
            DialectHandle::memref(),
        ]
    },
    run,
};

const CHECKED: [&str; 9] = [
    "memref.load",
    "memref.store",
    "memref.atomic_rmw",
    "memref.generic_atomic_rmw",
    "vector.load",
    "vector.store",
    "memref.subview",
    "memref.cast",
    "memref.copy",
];

/// The rank of a ranked memref type; `None` for anything else (an unranked memref).
fn rank(t: Type) -> Option<usize> {
    // SAFETY: reading a live type through the C API, after checking its kind.
    unsafe {
        let raw = t.to_raw();
        (mlir_sys::mlirTypeIsAMemRef(raw) && mlir_sys::mlirShapedTypeHasRank(raw))
            .then(|| mlir_sys::mlirShapedTypeGetRank(raw) as usize)
    }
}

/// The shape of a vector type; `None` for anything else.
fn vector_shape(t: Type) -> Option<Vec<i64>> {
    if !t.is_vector() {
        return None;
    }
    // SAFETY: reading the shape of a live vector type.
    unsafe {
        let raw = t.to_raw();
        Some(
            (0..mlir_sys::mlirShapedTypeGetRank(raw))
                .map(|i| mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize))
                .collect(),
        )
    }
}

/// The element type of a shaped type.
fn element(t: Type) -> Option<Type> {
    // SAFETY: reading a live shaped type's element type, after checking its kind.
    unsafe {
        let raw = t.to_raw();
        mlir_sys::mlirTypeIsAShaped(raw)
            .then(|| Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(raw)))
    }
}

/// One check: a condition that must hold, and what the message says when it does not.
struct Check<'c, 'a> {
    ok: Value<'c, 'a>,
    what: String,
}

/// An index-typed quantity: a constant, or a value of the IR.
#[derive(Clone, Copy)]
enum Size<'c, 'a> {
    Known(i64),
    Value(Value<'c, 'a>),
    /// Dimension `.1` of memref `.0`, which its type leaves dynamic.
    Dim(Value<'c, 'a>, usize),
}

impl<'c, 'a> Size<'c, 'a> {
    /// A value, a constant where constants decide it.
    fn of(v: Value<'c, 'a>) -> Self {
        static_index(v).map_or(Size::Value(v), Size::Known)
    }

    /// Dimension `d` of `memref`.
    fn dim(memref: Value<'c, 'a>, d: usize) -> Self {
        static_dim(memref.r#type(), d as i64).map_or(Size::Dim(memref, d), Size::Known)
    }

    fn known(self) -> Option<i64> {
        match self {
            Size::Known(v) => Some(v),
            _ => None,
        }
    }

    /// The quantity in the IR (emitted only once a check needs it).
    fn emit(self, e: &Emitter<'c, 'a>) -> Value<'c, 'a> {
        match self {
            Size::Known(v) => e.index(v),
            Size::Value(v) => v,
            Size::Dim(m, d) => e.dim(m, d as i64),
        }
    }
}

/// Emits the comparisons of one op before it; constants decide where they can.
struct Checker<'e, 'c, 'a> {
    e: &'e Emitter<'c, 'a>,
    out: Vec<Check<'c, 'a>>,
}

impl<'c, 'a> Checker<'_, 'c, 'a> {
    /// `index` (plus `len - 1`, the last element a vector reaches) is below dimension `d`.
    fn within(&mut self, memref: Value<'c, 'a>, index: Value<'c, 'a>, d: usize, len: i64) {
        let size = Size::dim(memref, d);
        if let (Some(s), Some(i)) = (size.known(), static_index(index)) {
            if i >= 0 && i.checked_add(len).is_some_and(|end| end <= s) {
                return;
            }
        }
        let e = self.e;
        let size = size.emit(e);
        let mut ok = e.cmpi(CmpiPredicate::Ult, index, size);
        if len > 1 {
            // index < size (above) and index + len <= size: no overflow past size.
            let end = e.addi(index, e.index(len));
            ok = e.andi(ok, e.cmpi(CmpiPredicate::Ule, end, size));
        }
        let ty = memref.r#type();
        let what = if len > 1 {
            format!("out of bounds along dimension {d} of {ty} ({len} elements from the index)")
        } else {
            format!("out of bounds along dimension {d} of {ty}")
        };
        self.out.push(Check { ok, what });
    }

    /// Two sizes agree.
    fn same(&mut self, a: Size<'c, 'a>, b: Size<'c, 'a>, what: String) {
        if let (Some(x), Some(y)) = (a.known(), b.known()) {
            if x == y {
                return;
            }
        }
        let e = self.e;
        let ok = e.cmpi(CmpiPredicate::Eq, a.emit(e), b.emit(e));
        self.out.push(Check { ok, what });
    }

    /// The accesses of `op`, an op of [`CHECKED`].
    fn check(&mut self, op: OperationRef<'c, 'a>, name: &str) -> Result<(), PassError> {
        let operand = |i: usize| {
            op.operand(i)
                .map_err(|_| unsupported(op, format!("missing operand #{i}")))
        };
        let operands = |from: usize| (from..op.operand_count()).map(operand);
        match name {
            "memref.load" | "memref.generic_atomic_rmw" => {
                self.indices(operand(0)?, operands(1).collect::<Result<_, _>>()?, &[])
            }
            "memref.store" | "memref.atomic_rmw" => {
                self.indices(operand(1)?, operands(2).collect::<Result<_, _>>()?, &[])
            }
            "vector.load" | "vector.store" => {
                let (memref, first, vector) = if name == "vector.load" {
                    let result = op
                        .result(0)
                        .map_err(|_| unsupported(op, "vector.load without a result"))?;
                    (operand(0)?, 1, result.r#type())
                } else {
                    (operand(1)?, 2, operand(0)?.r#type())
                };
                // A memref of vectors loads one of its elements.
                let of_vectors = element(memref.r#type()).is_some_and(|t| t.is_vector());
                let shape = match vector_shape(vector) {
                    Some(s) if !of_vectors => s,
                    _ => Vec::new(),
                };
                self.indices(memref, operands(first).collect::<Result<_, _>>()?, &shape)
            }
            "memref.subview" => self.subview(op),
            "memref.cast" => {
                let (source, result) = (
                    operand(0)?,
                    op.result(0)
                        .map_err(|_| unsupported(op, "memref.cast without a result"))?,
                );
                let (Some(r), Some(_)) = (rank(result.r#type()), rank(source.r#type())) else {
                    return Ok(());
                };
                for d in 0..r {
                    if let Some(s) = static_dim(result.r#type(), d as i64) {
                        let what = format!(
                            "dimension {d} of the source ({}) is not the result's {s}",
                            source.r#type()
                        );
                        self.same(Size::dim(source, d), Size::Known(s), what);
                    }
                }
                Ok(())
            }
            "memref.copy" => {
                let (source, target) = (operand(0)?, operand(1)?);
                let (Some(r), Some(_)) = (rank(source.r#type()), rank(target.r#type())) else {
                    return Ok(());
                };
                for d in 0..r {
                    let what = format!(
                        "the source ({}) and the target ({}) differ along dimension {d}",
                        source.r#type(),
                        target.r#type()
                    );
                    self.same(Size::dim(source, d), Size::dim(target, d), what);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `indices` within `memref`; the last `vector.len()` of them start a vector of that
    /// shape.
    fn indices(
        &mut self,
        memref: Value<'c, 'a>,
        indices: Vec<Value<'c, 'a>>,
        vector: &[i64],
    ) -> Result<(), PassError> {
        let Some(r) = rank(memref.r#type()) else {
            return Ok(());
        };
        if indices.len() != r || vector.len() > r {
            return Ok(());
        }
        for (d, index) in indices.into_iter().enumerate() {
            let len = match (d + vector.len()).checked_sub(r) {
                Some(v) => vector[v].max(1),
                None => 1,
            };
            self.within(memref, index, d, len);
        }
        Ok(())
    }

    /// A subview's first and last element along each dimension inside its source.
    fn subview(&mut self, op: OperationRef<'c, 'a>) -> Result<(), PassError> {
        let source = op
            .operand(0)
            .map_err(|_| unsupported(op, "memref.subview without a source"))?;
        let Some(r) = rank(source.r#type()) else {
            return Ok(());
        };
        let attr = |name: &str| op.attribute(name).ok().and_then(dense_i64s);
        let (Some(offsets), Some(sizes), Some(strides)) = (
            attr("static_offsets"),
            attr("static_sizes"),
            attr("static_strides"),
        ) else {
            return Ok(());
        };
        if offsets.len() != r || sizes.len() != r || strides.len() != r {
            return Ok(());
        }
        // The dynamic entries are the operands after the source, offsets, sizes, strides.
        let mut next = 1;
        let mut take = |values: &[i64]| -> Result<Vec<Size<'c, 'a>>, PassError> {
            values
                .iter()
                .map(|&v| {
                    if v != i64::MIN {
                        return Ok(Size::Known(v));
                    }
                    let value = op
                        .operand(next)
                        .map_err(|_| unsupported(op, "memref.subview operand out of range"))?;
                    next += 1;
                    Ok(Size::of(value))
                })
                .collect()
        };
        let offsets = take(&offsets)?;
        let sizes = take(&sizes)?;
        let strides = take(&strides)?;
        let e = self.e;
        for d in 0..r {
            let (offset, size, stride) = (offsets[d], sizes[d], strides[d]);
            let dim = Size::dim(source, d);
            if size.known() == Some(0) {
                continue;
            }
            if let (Some(o), Some(s), Some(t), Some(n)) =
                (offset.known(), size.known(), stride.known(), dim.known())
            {
                let last = (s - 1).checked_mul(t).and_then(|x| x.checked_add(o));
                if o >= 0 && o < n && last.is_some_and(|l| l >= 0 && l < n) {
                    continue;
                }
            }
            // size == 0, or offset and offset + (size - 1) * stride both below the size.
            let known_size = size.known();
            let (offset, size, stride, dim) =
                (offset.emit(e), size.emit(e), stride.emit(e), dim.emit(e));
            let last = e.addi(offset, e.muli(e.subi(size, e.index(1)), stride));
            let inside = e.andi(
                e.cmpi(CmpiPredicate::Ult, offset, dim),
                e.cmpi(CmpiPredicate::Ult, last, dim),
            );
            // (A constant size is above 0 here: an empty view was skipped above.)
            let ok = match known_size {
                Some(_) => inside,
                None => e.ori(e.cmpi(CmpiPredicate::Eq, size, e.index(0)), inside),
            };
            self.out.push(Check {
                ok,
                what: format!(
                    "the view leaves its source ({}) along dimension {d}",
                    source.r#type()
                ),
            });
        }
        Ok(())
    }
}

fn run<'c, 'a>(root: OperationRef<'c, 'a>, _: &PassOptions) -> Result<(), PassError> {
    // `to_ref` borrows the ContextRef itself: keep it alive for the whole run.
    let ctx_ref = root.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    let mut targets = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        let name = name.as_string_ref().as_str().unwrap_or("");
        if name == "gpu.module" || name == "gpu.func" || name == "gpu.launch" {
            return WalkResult::Skip;
        }
        if CHECKED.contains(&name) {
            targets.push(op.to_raw());
        }
        WalkResult::Advance
    });
    for raw in targets {
        // SAFETY: collected from the live root above; the pass only inserts ops before them.
        let op: OperationRef<'c, 'a> = unsafe { OperationRef::from_raw(raw) };
        // The walk skips kernels below the root; the root itself may sit in one.
        if ["gpu.launch", "gpu.func", "gpu.module"]
            .iter()
            .any(|k| enclosing(op, k).is_some())
        {
            continue;
        }
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        let e = Emitter::before(ctx, op).ok_or_else(|| unsupported(op, "op is not in a block"))?;
        let mut checker = Checker {
            e: &e,
            out: Vec::new(),
        };
        checker.check(op, &name)?;
        let place = location_text(op.location());
        for c in checker.out {
            e.insert(melior::dialect::cf::assert(
                ctx,
                c.ok,
                &format!("{name} at {place}: {}", c.what),
                e.loc(),
            ));
        }
    }
    Ok(())
}
