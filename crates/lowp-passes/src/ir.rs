//! A small IR emitter over melior: constants, arith/math ops, memref access and `scf`
//! loops with loop-carried values, all inserted at one insertion point.
//!
//! Every value it returns lives as long as the block the pass was handed (`'a`), so loop
//! bodies are built in place: the loop op is inserted first, then its body block is filled
//! through a nested [`Emitter`].

use melior::dialect::arith::{self, CmpfPredicate, CmpiPredicate};
use melior::ir::attribute::{AttributeLike, FloatAttribute, IntegerAttribute};
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationBuilder, OperationLike};
use melior::ir::r#type::{IntegerType, TypeLike};
use melior::ir::RegionLike;
use melior::ir::ValueLike;
use melior::ir::{
    Attribute, Block, BlockRef, Location, Operation, OperationRef, Region, ShapedTypeLike, Type,
    Value,
};
use melior::Context;

/// Where new operations go: before an existing operation, or at the end of a block.
#[derive(Clone, Copy)]
enum Point<'c, 'a> {
    Before(OperationRef<'c, 'a>),
    End,
}

/// Inserts operations at one point of one block.
#[derive(Clone, Copy)]
pub struct Emitter<'c, 'a> {
    ctx: &'c Context,
    block: BlockRef<'c, 'a>,
    point: Point<'c, 'a>,
    loc: Location<'c>,
}

impl<'c, 'a> Emitter<'c, 'a> {
    /// Insert before `op` (which must be in a block), with `op`'s location.
    pub fn before(ctx: &'c Context, op: OperationRef<'c, 'a>) -> Option<Self> {
        Some(Self {
            ctx,
            block: op.block()?,
            point: Point::Before(op),
            loc: op.location(),
        })
    }

    /// Append at the end of `block`.
    pub fn at_end(ctx: &'c Context, block: BlockRef<'c, 'a>, loc: Location<'c>) -> Self {
        Self {
            ctx,
            block,
            point: Point::End,
            loc,
        }
    }

    /// The context.
    pub fn ctx(&self) -> &'c Context {
        self.ctx
    }

    /// The location given to new operations.
    pub fn loc(&self) -> Location<'c> {
        self.loc
    }

    /// Insert an operation.
    pub fn insert(&self, op: Operation<'c>) -> OperationRef<'c, 'a> {
        match self.point {
            Point::Before(anchor) => self.block.insert_operation_before(anchor, op),
            Point::End => self.block.append_operation(op),
        }
    }

    /// Insert an operation and return its first result.
    pub fn val(&self, op: Operation<'c>) -> Value<'c, 'a> {
        self.insert(op)
            .result(0)
            .expect("operation built with one result")
            .into()
    }

    // ---- types -----------------------------------------------------------------------

    /// `iN`.
    pub fn int_type(&self, bits: u32) -> Type<'c> {
        IntegerType::new(self.ctx, bits).into()
    }

    /// `f32`.
    pub fn f32_type(&self) -> Type<'c> {
        Type::float32(self.ctx)
    }

    /// `f16`.
    pub fn f16_type(&self) -> Type<'c> {
        Type::float16(self.ctx)
    }

    /// `index`.
    pub fn index_type(&self) -> Type<'c> {
        Type::index(self.ctx)
    }

    // ---- constants -------------------------------------------------------------------

    /// An integer constant of type `iN` (`v` truncated to N bits by MLIR).
    pub fn int(&self, bits: u32, v: i64) -> Value<'c, 'a> {
        let t = self.int_type(bits);
        self.val(arith::constant(
            self.ctx,
            IntegerAttribute::new(t, v).into(),
            self.loc,
        ))
    }

    /// An `i32` constant from its bit pattern.
    pub fn i32(&self, v: u32) -> Value<'c, 'a> {
        self.int(32, v as i32 as i64)
    }

    /// An `index` constant.
    pub fn index(&self, v: i64) -> Value<'c, 'a> {
        self.val(arith::constant(
            self.ctx,
            IntegerAttribute::new(self.index_type(), v).into(),
            self.loc,
        ))
    }

    /// An `i1` constant.
    pub fn bool(&self, v: bool) -> Value<'c, 'a> {
        self.int(1, v as i64)
    }

    /// An `f32` constant with exactly the bits of `v` (NaN and infinities go through an
    /// integer constant and a bitcast: float attributes print them lossily).
    pub fn f32(&self, v: f32) -> Value<'c, 'a> {
        if v.is_finite() {
            self.val(arith::constant(
                self.ctx,
                FloatAttribute::new(self.ctx, self.f32_type(), v as f64).into(),
                self.loc,
            ))
        } else {
            let bits = self.i32(v.to_bits());
            self.bitcast(bits, self.f32_type())
        }
    }

    // ---- arith / math ----------------------------------------------------------------

    /// `arith.addi`.
    pub fn addi(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::addi(a, b, self.loc))
    }
    /// `arith.subi`.
    pub fn subi(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::subi(a, b, self.loc))
    }
    /// `arith.muli`.
    pub fn muli(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::muli(a, b, self.loc))
    }
    /// `arith.divui`.
    pub fn divui(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::divui(a, b, self.loc))
    }
    /// `arith.remui`.
    pub fn remui(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::remui(a, b, self.loc))
    }
    /// `arith.andi`.
    pub fn andi(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::andi(a, b, self.loc))
    }
    /// `arith.ori`.
    pub fn ori(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::ori(a, b, self.loc))
    }
    /// `arith.xori`.
    pub fn xori(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::xori(a, b, self.loc))
    }
    /// `arith.shli`.
    pub fn shli(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::shli(a, b, self.loc))
    }
    /// `arith.shrui`.
    pub fn shrui(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::shrui(a, b, self.loc))
    }
    /// `arith.minui`.
    pub fn minui(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::minui(a, b, self.loc))
    }
    /// `arith.maxui`.
    pub fn maxui(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::maxui(a, b, self.loc))
    }
    /// `arith.maxsi`.
    pub fn maxsi(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::maxsi(a, b, self.loc))
    }
    /// `arith.minsi`.
    pub fn minsi(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::minsi(a, b, self.loc))
    }
    /// `arith.cmpi`.
    pub fn cmpi(&self, p: CmpiPredicate, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::cmpi(self.ctx, p, a, b, self.loc))
    }
    /// `arith.cmpf`.
    pub fn cmpf(&self, p: CmpfPredicate, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::cmpf(self.ctx, p, a, b, self.loc))
    }
    /// `arith.select`.
    pub fn select(&self, c: Value<'c, '_>, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::select(c, a, b, self.loc))
    }
    /// `arith.addf`.
    pub fn addf(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::addf(a, b, self.loc))
    }
    /// `arith.mulf`.
    pub fn mulf(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::mulf(a, b, self.loc))
    }
    /// `arith.divf`.
    pub fn divf(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::divf(a, b, self.loc))
    }
    /// `arith.maxnumf` (NaN operands are ignored).
    pub fn maxnumf(&self, a: Value<'c, '_>, b: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(arith::maxnumf(a, b, self.loc))
    }
    /// `arith.bitcast`.
    pub fn bitcast(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::bitcast(v, t, self.loc))
    }
    /// `arith.extui`.
    pub fn extui(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::extui(v, t, self.loc))
    }
    /// `arith.trunci`.
    pub fn trunci(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::trunci(v, t, self.loc))
    }
    /// `arith.truncf` (round to nearest even).
    pub fn truncf(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::truncf(v, t, self.loc))
    }
    /// `arith.extf` (exact).
    pub fn extf(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::extf(v, t, self.loc))
    }
    /// `arith.uitofp`.
    pub fn uitofp(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::uitofp(v, t, self.loc))
    }
    /// `arith.sitofp` (signed integer to float, round to nearest even).
    pub fn sitofp(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::sitofp(v, t, self.loc))
    }
    /// `arith.index_castui`.
    pub fn index_castui(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(arith::index_castui(v, t, self.loc))
    }
    /// A one-operand, one-result op of the same type (`math.absf`, `math.ceil`, ...).
    pub fn unary(&self, name: &str, v: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new(name, self.loc)
                .add_operands(&[v])
                .add_results(&[v.r#type()])
                .build()
                .expect("valid unary operation"),
        )
    }

    // ---- memref ----------------------------------------------------------------------

    /// `memref.load`.
    pub fn load(&self, memref: Value<'c, '_>, indices: &[Value<'c, '_>]) -> Value<'c, 'a> {
        self.val(melior::dialect::memref::load(memref, indices, self.loc))
    }

    /// `memref.prefetch %m[indices], read, locality<3>, data`: a hint that the element's
    /// cache line will be read soon (`llvm.intr.prefetch`; no effect on the results).
    pub fn prefetch(&self, memref: Value<'c, '_>, indices: &[Value<'c, '_>]) {
        let mut operands = vec![memref];
        operands.extend_from_slice(indices);
        let flag = |v: bool| Attribute::parse(self.ctx, if v { "true" } else { "false" });
        self.insert(
            OperationBuilder::new("memref.prefetch", self.loc)
                .add_operands(&operands)
                .add_attributes(&[
                    (
                        melior::ir::Identifier::new(self.ctx, "isWrite"),
                        flag(false).expect("bool attribute"),
                    ),
                    (
                        melior::ir::Identifier::new(self.ctx, "isDataCache"),
                        flag(true).expect("bool attribute"),
                    ),
                    (
                        melior::ir::Identifier::new(self.ctx, "localityHint"),
                        IntegerAttribute::new(self.int_type(32), 3).into(),
                    ),
                ])
                .build()
                .expect("valid memref.prefetch"),
        );
    }

    /// `memref.store`.
    pub fn store(&self, v: Value<'c, '_>, memref: Value<'c, '_>, indices: &[Value<'c, '_>]) {
        self.insert(melior::dialect::memref::store(v, memref, indices, self.loc));
    }

    /// `memref.dim %m, i`.
    pub fn dim(&self, memref: Value<'c, '_>, i: i64) -> Value<'c, 'a> {
        let i = self.index(i);
        self.val(melior::dialect::memref::dim(memref, i, self.loc))
    }

    /// An integer address (`i64`) as an LLVM pointer in address space `space` (NVVM: 1
    /// global, 3 shared, 6 tensor memory); a global pointer goes through the generic one
    /// (`cvta.to.global`).
    pub fn pointer(&self, addr: Value<'c, '_>, space: u32) -> Value<'c, 'a> {
        let ty = |s: u32| {
            let text = match s {
                0 => "!llvm.ptr".to_string(),
                s => format!("!llvm.ptr<{s}>"),
            };
            Type::parse(self.ctx, &text).expect("valid pointer type")
        };
        let cast = |name: &str, v: Value<'c, '_>, to: u32| {
            self.val(
                OperationBuilder::new(name, self.loc)
                    .add_operands(&[v])
                    .add_results(&[ty(to)])
                    .build()
                    .expect("valid pointer cast"),
            )
        };
        match space {
            1 => cast("llvm.addrspacecast", cast("llvm.inttoptr", addr, 0), 1),
            s => cast("llvm.inttoptr", addr, s),
        }
    }

    /// Pointer `p` advanced by `bytes` (`llvm.getelementptr` over `i8` with a constant
    /// index): the form the NVPTX backend folds into the instruction's address
    /// (`[%rd+2048]`), where an integer `base + constant` beside a loop-invariant base
    /// would be hoisted out of the loop by LLVM as one more register. An offset beyond
    /// i32 (the attribute's range: rows of hundreds of MiB) is an i64 index operand.
    pub fn offset_pointer(&self, p: Value<'c, 'a>, bytes: i64) -> Value<'c, 'a> {
        if bytes == 0 {
            return p;
        }
        // `i32::MIN` in rawConstantIndices marks an index taken from the operands.
        let (index, operands) = match i32::try_from(bytes) {
            Ok(b) if b != i32::MIN => (b, vec![p]),
            _ => (i32::MIN, vec![p, self.int(64, bytes)]),
        };
        self.val(
            OperationBuilder::new("llvm.getelementptr", self.loc)
                .add_operands(&operands)
                .add_attributes(&[
                    (
                        melior::ir::Identifier::new(self.ctx, "rawConstantIndices"),
                        melior::ir::attribute::DenseI32ArrayAttribute::new(self.ctx, &[index])
                            .into(),
                    ),
                    (
                        melior::ir::Identifier::new(self.ctx, "elem_type"),
                        melior::ir::attribute::TypeAttribute::new(self.int_type(8)).into(),
                    ),
                ])
                .add_results(&[p.r#type()])
                .build()
                .expect("valid llvm.getelementptr"),
        )
    }

    /// `memref.extract_aligned_pointer_as_index`: the address of the memref's aligned
    /// buffer (its element 0 before the offset).
    pub fn aligned_pointer(&self, memref: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("memref.extract_aligned_pointer_as_index", self.loc)
                .add_operands(&[memref])
                .add_results(&[self.index_type()])
                .build()
                .expect("valid memref.extract_aligned_pointer_as_index"),
        )
    }

    /// The offset and strides (in elements) of a memref of rank `rank`, from
    /// `memref.extract_strided_metadata` (constants where its layout is static).
    pub fn strided(
        &self,
        memref: Value<'c, '_>,
        rank: usize,
    ) -> (Value<'c, 'a>, Vec<Value<'c, 'a>>) {
        let t = melior::ir::r#type::MemRefType::try_from(memref.r#type())
            .expect("strided metadata of a memref");
        let base = melior::ir::r#type::MemRefType::new(t.element(), &[], None, t.memory_space());
        let index = self.index_type();
        let mut results = vec![base.into(), index];
        results.extend(std::iter::repeat_n(index, 2 * rank));
        let op = self.insert(
            OperationBuilder::new("memref.extract_strided_metadata", self.loc)
                .add_operands(&[memref])
                .add_results(&results)
                .build()
                .expect("valid memref.extract_strided_metadata"),
        );
        let r = |i: usize| op.result(i).expect("metadata result").into();
        (r(1), (0..rank).map(|i| r(2 + rank + i)).collect())
    }

    /// `memref.alloc` of `shape` (`None` = dynamic, taken from `dynamic` in order), aligned
    /// to `align` bytes.
    pub fn alloc(
        &self,
        element: Type<'c>,
        shape: &[Option<i64>],
        dynamic: &[Value<'c, '_>],
        align: i64,
    ) -> Value<'c, 'a> {
        let dims: Vec<i64> = shape.iter().map(|d| d.unwrap_or(i64::MIN)).collect();
        let t = melior::ir::r#type::MemRefType::new(element, &dims, None, None);
        let align = IntegerAttribute::new(self.int_type(64), align);
        self.val(melior::dialect::memref::alloc(
            self.ctx,
            t,
            dynamic,
            &[],
            Some(align),
            self.loc,
        ))
    }

    /// `memref.alloca` of `n` elements (static size), 64-byte aligned.
    pub fn alloca(&self, element: Type<'c>, n: i64) -> Value<'c, 'a> {
        let t = melior::ir::r#type::MemRefType::new(element, &[n], None, None);
        let align = IntegerAttribute::new(self.int_type(64), 64);
        self.val(melior::dialect::memref::alloca(
            self.ctx,
            t,
            &[],
            &[],
            Some(align),
            self.loc,
        ))
    }

    /// `memref.dealloc`.
    pub fn dealloc(&self, memref: Value<'c, '_>) {
        self.insert(melior::dialect::memref::dealloc(memref, self.loc));
    }

    // ---- vector ----------------------------------------------------------------------

    /// `vector<n x element>`.
    pub fn vector_type(&self, n: u64, element: Type<'c>) -> Type<'c> {
        Type::vector(&[n], element)
    }

    /// A vector of zeros.
    pub fn zero_vector(&self, n: u64) -> Value<'c, 'a> {
        self.f32_splat(0.0, n)
    }

    /// A vector of `n` copies of the f32 `v`, exactly its bits (NaN and infinities, which
    /// float attributes print lossily, as a splat of the bits and a bitcast).
    pub fn f32_splat(&self, v: f32, n: u64) -> Value<'c, 'a> {
        let t = self.vector_type(n, self.f32_type());
        if !v.is_finite() {
            return self.bitcast(self.int_splat(32, i64::from(v.to_bits() as i32), n), t);
        }
        let value = FloatAttribute::new(self.ctx, self.f32_type(), f64::from(v)).into();
        let dense = melior::ir::attribute::DenseElementsAttribute::new(t, &[value])
            .expect("splat of one value");
        self.val(arith::constant(self.ctx, dense.into(), self.loc))
    }

    /// A vector of `n` copies of the `iN` constant `v`.
    pub fn int_splat(&self, bits: u32, v: i64, n: u64) -> Value<'c, 'a> {
        self.int_dense(bits, &[v], n)
    }

    /// The `vector<len x iN>` constant of `values` (each truncated to N bits by MLIR).
    pub fn int_vector(&self, bits: u32, values: &[i64]) -> Value<'c, 'a> {
        self.int_dense(bits, values, values.len() as u64)
    }

    /// A `vector<n x iN>` constant of `values`: one value (a splat) or `n`.
    fn int_dense(&self, bits: u32, values: &[i64], n: u64) -> Value<'c, 'a> {
        let element = self.int_type(bits);
        let t = self.vector_type(n, element);
        let attrs: Vec<Attribute> = values
            .iter()
            .map(|&v| IntegerAttribute::new(element, v).into())
            .collect();
        let dense = melior::ir::attribute::DenseElementsAttribute::new(t, &attrs)
            .expect("a splat or one value per element");
        self.val(arith::constant(self.ctx, dense.into(), self.loc))
    }

    /// `vector.bitcast` of a 1-D vector to `n` elements of `element` (the same bits).
    pub fn vector_bitcast(&self, v: Value<'c, '_>, n: u64, element: Type<'c>) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("vector.bitcast", self.loc)
                .add_operands(&[v])
                .add_results(&[self.vector_type(n, element)])
                .build()
                .expect("valid vector.bitcast"),
        )
    }

    /// `vector.reduction <kind>, %v`: the lanes of a 1-D vector combined by `kind` (`and`,
    /// `or`, `add`, ...) into one element.
    pub fn reduce(&self, kind: &str, v: Value<'c, '_>) -> Value<'c, 'a> {
        let t = v.r#type();
        assert!(t.is_vector(), "vector.reduction of a vector");
        // SAFETY: the element type of a live vector type.
        let element = unsafe { Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(t.to_raw())) };
        let kind = format!("#vector.kind<{kind}>");
        self.val(
            OperationBuilder::new("vector.reduction", self.loc)
                .add_operands(&[v])
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "kind"),
                    Attribute::parse(self.ctx, &kind).expect("a vector combining kind"),
                )])
                .add_results(&[element])
                .build()
                .expect("valid vector.reduction"),
        )
    }

    /// `vector.broadcast %scalar`.
    pub fn broadcast(&self, v: Value<'c, '_>, n: u64) -> Value<'c, 'a> {
        let t = self.vector_type(n, v.r#type());
        self.val(
            OperationBuilder::new("vector.broadcast", self.loc)
                .add_operands(&[v])
                .add_results(&[t])
                .build()
                .expect("valid vector.broadcast"),
        )
    }

    /// `vector.load %memref[indices] : vector<n x element>`.
    pub fn vload(&self, memref: Value<'c, '_>, indices: &[Value<'c, '_>], n: u64) -> Value<'c, 'a> {
        let element = melior::ir::r#type::MemRefType::try_from(memref.r#type())
            .expect("vector.load from a memref")
            .element();
        let mut operands = vec![memref];
        operands.extend_from_slice(indices);
        self.val(
            OperationBuilder::new("vector.load", self.loc)
                .add_operands(&operands)
                .add_results(&[self.vector_type(n, element)])
                .build()
                .expect("valid vector.load"),
        )
    }

    /// `vector.load` of `n` elements that the caller promises start `align`-byte aligned
    /// (so that a GPU backend may load them as one word).
    pub fn vload_aligned(
        &self,
        memref: Value<'c, '_>,
        indices: &[Value<'c, '_>],
        n: u64,
        align: i64,
    ) -> Value<'c, 'a> {
        let element = melior::ir::r#type::MemRefType::try_from(memref.r#type())
            .expect("vector.load from a memref")
            .element();
        let mut operands = vec![memref];
        operands.extend_from_slice(indices);
        self.val(
            OperationBuilder::new("vector.load", self.loc)
                .add_operands(&operands)
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "alignment"),
                    IntegerAttribute::new(self.int_type(64), align).into(),
                )])
                .add_results(&[self.vector_type(n, element)])
                .build()
                .expect("valid vector.load"),
        )
    }

    /// The `i(8 n)` whose bytes, low to high, are the `n` elements of a `vector<n x i8>`.
    pub fn int_of_bytes(&self, v: Value<'c, '_>, n: u32) -> Value<'c, 'a> {
        let int = self.int_type(8 * n);
        let as_int = self.val(
            OperationBuilder::new("vector.bitcast", self.loc)
                .add_operands(&[v])
                .add_results(&[self.vector_type(1, int)])
                .build()
                .expect("valid vector.bitcast"),
        );
        self.extract(as_int, 0, int)
    }

    /// `vector.extract %v[position]`: one element.
    pub fn extract(&self, v: Value<'c, '_>, position: i64, element: Type<'c>) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("vector.extract", self.loc)
                .add_operands(&[v])
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "static_position"),
                    melior::ir::attribute::DenseI64ArrayAttribute::new(self.ctx, &[position])
                        .into(),
                )])
                .add_results(&[element])
                .build()
                .expect("valid vector.extract"),
        )
    }

    /// `llvm.inline_asm` (AT&T dialect, NVPTX's) of `text` over `operands` with LLVM
    /// `constraints`, giving `result`; with `side_effects`, kept in order with the other
    /// such assembly (else LLVM may move, hoist or merge it like any pure value).
    pub fn inline_asm(
        &self,
        text: &str,
        operands: &[Value<'c, '_>],
        constraints: &str,
        result: Type<'c>,
        side_effects: bool,
    ) -> Value<'c, 'a> {
        let ctx = self.ctx;
        let id = |n: &str| melior::ir::Identifier::new(ctx, n);
        let mut attributes = vec![
            (
                id("asm_string"),
                melior::ir::attribute::StringAttribute::new(ctx, text).into(),
            ),
            (
                id("constraints"),
                melior::ir::attribute::StringAttribute::new(ctx, constraints).into(),
            ),
            // AT&T (0), the dialect NVPTX inline assembly is written in.
            (
                id("asm_dialect"),
                Attribute::parse(ctx, "0 : i64").expect("valid asm dialect"),
            ),
        ];
        if side_effects {
            attributes.push((id("has_side_effects"), Attribute::unit(ctx)));
        }
        self.val(
            OperationBuilder::new("llvm.inline_asm", self.loc)
                .add_operands(operands)
                .add_attributes(&attributes)
                .add_results(&[result])
                .build()
                .expect("valid llvm.inline_asm"),
        )
    }

    /// `vector.shuffle %a, %b [mask]`: element i is element `mask[i]` of `a` then `b`
    /// (vectors of `element`).
    pub fn shuffle(
        &self,
        a: Value<'c, '_>,
        b: Value<'c, '_>,
        element: Type<'c>,
        mask: &[i64],
    ) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("vector.shuffle", self.loc)
                .add_operands(&[a, b])
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "mask"),
                    melior::ir::attribute::DenseI64ArrayAttribute::new(self.ctx, mask).into(),
                )])
                .add_results(&[self.vector_type(mask.len() as u64, element)])
                .build()
                .expect("valid vector.shuffle"),
        )
    }

    /// `llvm.bitcast`: the same bits as another type of their width, scalar and vector
    /// alike (`arith.bitcast` keeps the shape).
    pub fn llvm_bitcast(&self, v: Value<'c, '_>, t: Type<'c>) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("llvm.bitcast", self.loc)
                .add_operands(&[v])
                .add_results(&[t])
                .build()
                .expect("valid llvm.bitcast"),
        )
    }

    /// `vector.from_elements`: a vector of the (same-typed, at least one) values.
    pub fn from_elements(&self, values: &[Value<'c, '_>]) -> Value<'c, 'a> {
        let t = self.vector_type(values.len() as u64, values[0].r#type());
        self.val(
            OperationBuilder::new("vector.from_elements", self.loc)
                .add_operands(values)
                .add_results(&[t])
                .build()
                .expect("valid vector.from_elements"),
        )
    }

    // ---- llvm ------------------------------------------------------------------------

    /// `llvm.call_intrinsic "name"(operands) : (...) -> result`: for target intrinsics MLIR
    /// has no op for (the NVVM translation emits the call as is).
    pub fn call_intrinsic(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        result: Type<'c>,
    ) -> Value<'c, 'a> {
        let ctx = self.ctx;
        let id = |n: &str| melior::ir::Identifier::new(ctx, n);
        self.val(
            OperationBuilder::new("llvm.call_intrinsic", self.loc)
                .add_operands(operands)
                .add_attributes(&[
                    (
                        id("intrin"),
                        melior::ir::attribute::StringAttribute::new(ctx, name).into(),
                    ),
                    (
                        id("op_bundle_sizes"),
                        melior::ir::attribute::DenseI32ArrayAttribute::new(ctx, &[]).into(),
                    ),
                    (
                        id("operandSegmentSizes"),
                        melior::ir::attribute::DenseI32ArrayAttribute::new(
                            ctx,
                            &[operands.len() as i32, 0],
                        )
                        .into(),
                    ),
                ])
                .add_results(&[result])
                .build()
                .expect("valid llvm.call_intrinsic"),
        )
    }

    /// `llvm.extractvalue %aggregate[position] : element`.
    pub fn extract_value(
        &self,
        aggregate: Value<'c, '_>,
        position: i64,
        element: Type<'c>,
    ) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("llvm.extractvalue", self.loc)
                .add_operands(&[aggregate])
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "position"),
                    melior::ir::attribute::DenseI64ArrayAttribute::new(self.ctx, &[position])
                        .into(),
                )])
                .add_results(&[element])
                .build()
                .expect("valid llvm.extractvalue"),
        )
    }

    /// `vector.store %v, %memref[indices]`.
    pub fn vstore(&self, v: Value<'c, '_>, memref: Value<'c, '_>, indices: &[Value<'c, '_>]) {
        let mut operands = vec![v, memref];
        operands.extend_from_slice(indices);
        self.insert(
            OperationBuilder::new("vector.store", self.loc)
                .add_operands(&operands)
                .build()
                .expect("valid vector.store"),
        );
    }

    /// `vector.store` of `v` that the caller promises lands `align`-byte aligned (so that a
    /// GPU backend may store it as one vector).
    pub fn vstore_aligned(
        &self,
        v: Value<'c, '_>,
        memref: Value<'c, '_>,
        indices: &[Value<'c, '_>],
        align: i64,
    ) {
        let mut operands = vec![v, memref];
        operands.extend_from_slice(indices);
        self.insert(
            OperationBuilder::new("vector.store", self.loc)
                .add_operands(&operands)
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "alignment"),
                    IntegerAttribute::new(self.int_type(64), align).into(),
                )])
                .build()
                .expect("valid vector.store"),
        );
    }

    /// `vector.fma %a, %b, %c` (a * b + c, one rounding).
    pub fn fma(&self, a: Value<'c, '_>, b: Value<'c, '_>, c: Value<'c, '_>) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("vector.fma", self.loc)
                .add_operands(&[a, b, c])
                .add_results(&[a.r#type()])
                .build()
                .expect("valid vector.fma"),
        )
    }

    /// `a * b + c` of scalars with one rounding, as the LLVM intrinsic (`math.fma` would
    /// become a libdevice call on NVVM): one instruction instead of a multiply and an add.
    pub fn scalar_fma(
        &self,
        a: Value<'c, '_>,
        b: Value<'c, '_>,
        c: Value<'c, '_>,
    ) -> Value<'c, 'a> {
        self.val(
            OperationBuilder::new("llvm.intr.fma", self.loc)
                .add_operands(&[a, b, c])
                .add_results(&[a.r#type()])
                .build()
                .expect("valid llvm.intr.fma"),
        )
    }

    // ---- control flow ----------------------------------------------------------------

    /// `scf.for %iv = lb to ub step s iter_args(inits)`: `body` gets an emitter at the end
    /// of the loop body, the induction variable and the loop-carried values, and returns the
    /// values to yield. Returns the loop's results.
    pub fn for_loop(
        &self,
        lb: Value<'c, '_>,
        ub: Value<'c, '_>,
        step: Value<'c, '_>,
        inits: &[Value<'c, '_>],
        body: impl FnOnce(&Emitter<'c, 'a>, Value<'c, 'a>, &[Value<'c, 'a>]) -> Vec<Value<'c, 'a>>,
    ) -> Vec<Value<'c, 'a>> {
        let mut arg_types = vec![(self.index_type(), self.loc)];
        arg_types.extend(inits.iter().map(|v| (v.r#type(), self.loc)));
        let region = Region::new();
        region.append_block(Block::new(&arg_types));
        let mut operands = vec![lb, ub, step];
        operands.extend_from_slice(inits);
        let result_types: Vec<Type> = inits.iter().map(|v| v.r#type()).collect();
        let op = self.insert(
            OperationBuilder::new("scf.for", self.loc)
                .add_operands(&operands)
                .add_results(&result_types)
                .add_regions([region])
                .build()
                .expect("valid scf.for"),
        );
        let block = op
            .region(0)
            .expect("scf.for has a body region")
            .first_block()
            .expect("scf.for body block");
        let inner = Emitter::at_end(self.ctx, block, self.loc);
        let iv: Value = block.argument(0).expect("induction variable").into();
        let carried: Vec<Value> = (1..=inits.len())
            .map(|i| block.argument(i).expect("iter arg").into())
            .collect();
        let yielded = body(&inner, iv, &carried);
        inner.insert(melior::dialect::scf::r#yield(&yielded, self.loc));
        op.results().map(Into::into).collect()
    }

    /// `scf.parallel (%i) = (lb) to (ub) step (s)`: iterations may run concurrently.
    pub fn parallel_loop(
        &self,
        lb: Value<'c, '_>,
        ub: Value<'c, '_>,
        step: Value<'c, '_>,
        body: impl FnOnce(&Emitter<'c, 'a>, Value<'c, 'a>),
    ) {
        self.parallel_nest(&[lb], &[ub], &[step], |e, ivs| body(e, ivs[0]));
    }

    /// `scf.parallel (%i, %j, ..) = (lbs) to (ubs) step (steps)`: one loop of several
    /// dimensions, whose iterations may all run concurrently (what
    /// `scf-parallel-loop-tiling` and `gpu-map-parallel-loops` map onto blocks and threads).
    pub fn parallel_nest(
        &self,
        lbs: &[Value<'c, '_>],
        ubs: &[Value<'c, '_>],
        steps: &[Value<'c, '_>],
        body: impl FnOnce(&Emitter<'c, 'a>, &[Value<'c, 'a>]),
    ) {
        let rank = lbs.len();
        debug_assert!(ubs.len() == rank && steps.len() == rank);
        let region = Region::new();
        let args: Vec<_> = (0..rank).map(|_| (self.index_type(), self.loc)).collect();
        region.append_block(Block::new(&args));
        let sizes = melior::ir::attribute::DenseI32ArrayAttribute::new(
            self.ctx,
            &[rank as i32, rank as i32, rank as i32, 0],
        );
        let mut operands: Vec<Value> = Vec::with_capacity(3 * rank);
        operands.extend_from_slice(lbs);
        operands.extend_from_slice(ubs);
        operands.extend_from_slice(steps);
        let op = self.insert(
            OperationBuilder::new("scf.parallel", self.loc)
                .add_operands(&operands)
                .add_attributes(&[(
                    melior::ir::Identifier::new(self.ctx, "operandSegmentSizes"),
                    sizes.into(),
                )])
                .add_regions([region])
                .build()
                .expect("valid scf.parallel"),
        );
        let block = op
            .region(0)
            .expect("scf.parallel body")
            .first_block()
            .expect("scf.parallel block");
        let inner = Emitter::at_end(self.ctx, block, self.loc);
        let ivs: Vec<Value> = (0..rank)
            .map(|i| block.argument(i).expect("induction variable").into())
            .collect();
        body(&inner, &ivs);
        inner.insert(
            OperationBuilder::new("scf.reduce", self.loc)
                .build()
                .expect("valid scf.reduce"),
        );
    }

    /// `gpu.launch` of `grid` blocks of `block` threads with workgroup (shared) memory
    /// buffers of the given memref types: `body` gets an emitter in the launch, the block
    /// ids (x, y, z), the thread ids and the buffers. The body ends in `gpu.terminator`.
    pub fn gpu_launch(
        &self,
        grid: [Value<'c, '_>; 3],
        block: [Value<'c, '_>; 3],
        workgroup: &[Type<'c>],
        body: impl FnOnce(&Emitter<'c, 'a>, [Value<'c, 'a>; 3], [Value<'c, 'a>; 3], &[Value<'c, 'a>]),
    ) {
        self.launch(grid, block, None, workgroup, None, body)
    }

    /// A `gpu.launch` with `bytes` of dynamic shared memory and no workgroup attributions,
    /// in clusters of `cluster` blocks where given (`grid` a multiple of it): `body` gets
    /// block ids, thread ids and the memory as one
    /// `memref<?xi8, #gpu.address_space<workgroup>>` (`gpu.dynamic_shared_memory`; its base
    /// is only 16-byte aligned).
    pub fn gpu_launch_dynamic(
        &self,
        grid: [Value<'c, '_>; 3],
        block: [Value<'c, '_>; 3],
        cluster: Option<[Value<'c, '_>; 3]>,
        bytes: i64,
        body: impl FnOnce(&Emitter<'c, 'a>, [Value<'c, 'a>; 3], [Value<'c, 'a>; 3], Value<'c, 'a>),
    ) {
        let size = self.int(32, bytes);
        self.launch(grid, block, cluster, &[], Some(size), |e, bid, tid, _| {
            let t = Type::parse(e.ctx, "memref<?xi8, #gpu.address_space<workgroup>>")
                .expect("valid dynamic shared memory type");
            let memory = e.val(
                OperationBuilder::new("gpu.dynamic_shared_memory", e.loc)
                    .add_results(&[t])
                    .build()
                    .expect("valid gpu.dynamic_shared_memory"),
            );
            body(e, bid, tid, memory)
        })
    }

    fn launch(
        &self,
        grid: [Value<'c, '_>; 3],
        block: [Value<'c, '_>; 3],
        cluster: Option<[Value<'c, '_>; 3]>,
        workgroup: &[Type<'c>],
        dynamic: Option<Value<'c, '_>>,
        body: impl FnOnce(&Emitter<'c, 'a>, [Value<'c, 'a>; 3], [Value<'c, 'a>; 3], &[Value<'c, 'a>]),
    ) {
        // Block and thread ids, grid and block sizes; with clusters also cluster ids and
        // sizes.
        let config = if cluster.is_some() { 18 } else { 12 };
        let mut args: Vec<(Type, Location)> =
            (0..config).map(|_| (self.index_type(), self.loc)).collect();
        args.extend(workgroup.iter().map(|&t| (t, self.loc)));
        let region = Region::new();
        region.append_block(Block::new(&args));
        let ctx = self.ctx;
        let c = cluster.is_some() as i32;
        let sizes = melior::ir::attribute::DenseI32ArrayAttribute::new(
            ctx,
            &[0, 1, 1, 1, 1, 1, 1, c, c, c, dynamic.is_some() as i32],
        );
        let mut operands = vec![grid[0], grid[1], grid[2], block[0], block[1], block[2]];
        operands.extend(cluster.into_iter().flatten());
        operands.extend(dynamic);
        let op = self.insert(
            OperationBuilder::new("gpu.launch", self.loc)
                .add_operands(&operands)
                .add_attributes(&[
                    (
                        melior::ir::Identifier::new(ctx, "operandSegmentSizes"),
                        sizes.into(),
                    ),
                    (
                        melior::ir::Identifier::new(ctx, "workgroup_attributions"),
                        IntegerAttribute::new(self.int_type(64), workgroup.len() as i64).into(),
                    ),
                ])
                .add_regions([region])
                .build()
                .expect("valid gpu.launch"),
        );
        let b = op
            .region(0)
            .expect("gpu.launch body")
            .first_block()
            .expect("gpu.launch block");
        let inner = Emitter::at_end(ctx, b, self.loc);
        let arg = |i: usize| -> Value<'c, 'a> { b.argument(i).expect("launch argument").into() };
        let buffers: Vec<Value> = (0..workgroup.len()).map(|i| arg(config + i)).collect();
        body(
            &inner,
            [arg(0), arg(1), arg(2)],
            [arg(3), arg(4), arg(5)],
            &buffers,
        );
        inner.insert(
            OperationBuilder::new("gpu.terminator", self.loc)
                .build()
                .expect("valid gpu.terminator"),
        );
    }

    /// An operation with no operands and no results (`gpu.barrier`, the NVVM fences).
    pub fn bare(&self, name: &str, attributes: &[(&str, &str)]) {
        let attrs: Vec<_> = attributes
            .iter()
            .map(|&(n, v)| {
                (
                    melior::ir::Identifier::new(self.ctx, n),
                    melior::ir::Attribute::parse(self.ctx, v).expect("valid attribute"),
                )
            })
            .collect();
        self.insert(
            OperationBuilder::new(name, self.loc)
                .add_attributes(&attrs)
                .build()
                .expect("valid operation"),
        );
    }

    /// `scf.if %cond -> (types) { then } else { otherwise }`: each branch returns the
    /// values it yields. Returns the results.
    pub fn if_else(
        &self,
        cond: Value<'c, '_>,
        types: &[Type<'c>],
        then: impl FnOnce(&Emitter<'c, 'a>) -> Vec<Value<'c, 'a>>,
        otherwise: impl FnOnce(&Emitter<'c, 'a>) -> Vec<Value<'c, 'a>>,
    ) -> Vec<Value<'c, 'a>> {
        let (r0, r1) = (Region::new(), Region::new());
        r0.append_block(Block::new(&[]));
        r1.append_block(Block::new(&[]));
        let op = self.insert(
            OperationBuilder::new("scf.if", self.loc)
                .add_operands(&[cond])
                .add_results(types)
                .add_regions([r0, r1])
                .build()
                .expect("valid scf.if"),
        );
        for (i, branch) in [0usize, 1].into_iter().zip([
            Box::new(then) as Box<dyn FnOnce(&Emitter<'c, 'a>) -> Vec<Value<'c, 'a>>>,
            Box::new(otherwise),
        ]) {
            let block = op
                .region(i)
                .expect("scf.if region")
                .first_block()
                .expect("scf.if block");
            let inner = Emitter::at_end(self.ctx, block, self.loc);
            let yielded = branch(&inner);
            inner.insert(melior::dialect::scf::r#yield(&yielded, self.loc));
        }
        op.results().map(Into::into).collect()
    }

    /// `scf.if %cond { then }` with no results; returns the then block's `scf.yield`.
    pub fn if_then(
        &self,
        cond: Value<'c, '_>,
        then: impl FnOnce(&Emitter<'c, 'a>),
    ) -> OperationRef<'c, 'a> {
        let region = Region::new();
        region.append_block(Block::new(&[]));
        let op = self.insert(
            OperationBuilder::new("scf.if", self.loc)
                .add_operands(&[cond])
                .add_regions([region, Region::new()])
                .build()
                .expect("valid scf.if"),
        );
        let block = op
            .region(0)
            .expect("then region")
            .first_block()
            .expect("then block");
        let inner = Emitter::at_end(self.ctx, block, self.loc);
        then(&inner);
        inner.insert(melior::dialect::scf::r#yield(&[], self.loc))
    }
}

/// The elements of a dense i32 array attribute (an op's `operandSegmentSizes`), or `None`
/// when `attr` is another kind of attribute.
pub fn dense_i32s(attr: Attribute) -> Option<Vec<i32>> {
    // SAFETY: reading a live attribute through the C API, its elements only once its kind
    // is checked.
    unsafe {
        let raw = attr.to_raw();
        mlir_sys::mlirAttributeIsADenseI32Array(raw).then(|| {
            (0..mlir_sys::mlirDenseArrayGetNumElements(raw))
                .map(|i| mlir_sys::mlirDenseI32ArrayGetElement(raw, i))
                .collect()
        })
    }
}

/// The elements of a dense i64 array attribute (a subview's `static_offsets`), or `None`
/// when `attr` is another kind of attribute.
pub fn dense_i64s(attr: Attribute) -> Option<Vec<i64>> {
    // SAFETY: reading a live attribute through the C API, its elements only once its kind
    // is checked.
    unsafe {
        let raw = attr.to_raw();
        mlir_sys::mlirAttributeIsADenseI64Array(raw).then(|| {
            (0..mlir_sys::mlirDenseArrayGetNumElements(raw))
                .map(|i| mlir_sys::mlirDenseI64ArrayGetElement(raw, i))
                .collect()
        })
    }
}

/// The value of `v` when an integer (or index) `arith.constant` defines it.
pub fn constant_int(v: Value) -> Option<i64> {
    // SAFETY: reading a live value, its defining op and attribute through the C API.
    unsafe {
        let raw = v.to_raw();
        if !mlir_sys::mlirValueIsAOpResult(raw) {
            return None;
        }
        let op = OperationRef::from_raw(mlir_sys::mlirOpResultGetOwner(raw));
        if op.name().as_string_ref().as_str() != Ok("arith.constant") {
            return None;
        }
        let attr = op.attribute("value").ok()?.to_raw();
        mlir_sys::mlirAttributeIsAInteger(attr).then(|| mlir_sys::mlirIntegerAttrGetValueInt(attr))
    }
}

/// Dimension `index` of a ranked shaped type (memref or tensor) where it is static; `None`
/// where it is dynamic, out of the rank, or `t` is not a ranked shaped type.
pub fn static_dim(t: Type, index: i64) -> Option<i64> {
    // SAFETY: a shaped type's size at an index checked against its rank.
    unsafe {
        let t = t.to_raw();
        if !mlir_sys::mlirTypeIsAShaped(t)
            || !mlir_sys::mlirShapedTypeHasRank(t)
            || !(0..mlir_sys::mlirShapedTypeGetRank(t)).contains(&index)
            || mlir_sys::mlirShapedTypeIsDynamicDim(t, index as isize)
        {
            return None;
        }
        Some(mlir_sys::mlirShapedTypeGetDimSize(t, index as isize))
    }
}

/// The value of index or integer `v` where constants alone decide it: an `arith.constant`,
/// arith's integer arithmetic, `memref.dim` of a static size and `affine.apply` of such
/// values (what a grid size is before `canonicalize` folds it). `None` where a run-time
/// value enters, or on overflow or division by zero.
pub fn static_index(v: Value) -> Option<i64> {
    static_index_at(v, 0)
}

fn static_index_at(v: Value, depth: u32) -> Option<i64> {
    if let Some(c) = constant_int(v) {
        return Some(c);
    }
    if depth > 32 {
        return None;
    }
    // SAFETY: reading a live value, its defining op, operands and attributes through the
    // C API.
    let op = unsafe {
        let raw = v.to_raw();
        if !mlir_sys::mlirValueIsAOpResult(raw) {
            return None;
        }
        OperationRef::from_raw(mlir_sys::mlirOpResultGetOwner(raw))
    };
    let at = |i: usize| {
        op.operand(i)
            .ok()
            .and_then(|o| static_index_at(o, depth + 1))
    };
    let name = op.name();
    let name = name.as_string_ref().as_str().ok()?;
    let binary = |f: fn(i64, i64) -> Option<i64>| f(at(0)?, at(1)?);
    match name {
        "arith.addi" => binary(i64::checked_add),
        "arith.subi" => binary(i64::checked_sub),
        "arith.muli" => binary(i64::checked_mul),
        "arith.divui" | "arith.divsi" | "arith.floordivsi" => {
            binary(|a, b| (a >= 0 && b > 0).then(|| a / b))
        }
        "arith.ceildivui" | "arith.ceildivsi" => {
            binary(|a, b| (a >= 0 && b > 0).then(|| (a as u64).div_ceil(b as u64) as i64))
        }
        "arith.remui" | "arith.remsi" => binary(|a, b| (a >= 0 && b > 0).then(|| a % b)),
        "arith.minui" | "arith.minsi" => binary(|a, b| Some(a.min(b))),
        "arith.maxui" | "arith.maxsi" => binary(|a, b| Some(a.max(b))),
        "arith.index_cast" | "arith.index_castui" => at(0),
        "memref.dim" => static_dim(op.operand(0).ok()?.r#type(), at(1)?),
        "affine.apply" => {
            // SAFETY: the `map` attribute of affine.apply, checked to be an affine map.
            let map = unsafe {
                let attr = op.attribute("map").ok()?.to_raw();
                if !mlir_sys::mlirAttributeIsAAffineMap(attr) {
                    return None;
                }
                mlir_sys::mlirAffineMapAttrGetValue(attr)
            };
            // SAFETY: reading the map's shape.
            let (dims, results) = unsafe {
                (
                    mlir_sys::mlirAffineMapGetNumDims(map) as usize,
                    mlir_sys::mlirAffineMapGetNumResults(map),
                )
            };
            if results != 1 {
                return None;
            }
            let inputs: Option<Vec<i64>> = (0..op.operand_count()).map(at).collect();
            // SAFETY: the map's one result.
            affine_value(
                unsafe { mlir_sys::mlirAffineMapGetResult(map, 0) },
                dims,
                &inputs?,
            )
        }
        _ => None,
    }
}

/// An affine expression's value for dimension and symbol values `inputs` (symbols after
/// the `dims` dimensions).
fn affine_value(expr: mlir_sys::MlirAffineExpr, dims: usize, inputs: &[i64]) -> Option<i64> {
    // SAFETY: reading a live affine expression through the C API, each accessor after its
    // kind is checked.
    unsafe {
        if mlir_sys::mlirAffineExprIsAConstant(expr) {
            return Some(mlir_sys::mlirAffineConstantExprGetValue(expr));
        }
        if mlir_sys::mlirAffineExprIsADim(expr) {
            return inputs
                .get(mlir_sys::mlirAffineDimExprGetPosition(expr) as usize)
                .copied();
        }
        if mlir_sys::mlirAffineExprIsASymbol(expr) {
            let at = dims + mlir_sys::mlirAffineSymbolExprGetPosition(expr) as usize;
            return inputs.get(at).copied();
        }
        if !mlir_sys::mlirAffineExprIsABinary(expr) {
            return None;
        }
        let a = affine_value(mlir_sys::mlirAffineBinaryOpExprGetLHS(expr), dims, inputs)?;
        let b = affine_value(mlir_sys::mlirAffineBinaryOpExprGetRHS(expr), dims, inputs)?;
        if mlir_sys::mlirAffineExprIsAAdd(expr) {
            a.checked_add(b)
        } else if mlir_sys::mlirAffineExprIsAMul(expr) {
            a.checked_mul(b)
        } else if b <= 0 {
            None
        } else if mlir_sys::mlirAffineExprIsAMod(expr) {
            Some(a.rem_euclid(b))
        } else if mlir_sys::mlirAffineExprIsAFloorDiv(expr) {
            Some(a.div_euclid(b))
        } else if mlir_sys::mlirAffineExprIsACeilDiv(expr) {
            Some(-((-a).div_euclid(b)))
        } else {
            None
        }
    }
}

/// `s` as a C API string (borrowed: live as long as `s`).
pub fn string_ref(s: &str) -> mlir_sys::MlirStringRef {
    mlir_sys::MlirStringRef {
        data: s.as_ptr() as *const _,
        length: s.len(),
    }
}

/// Emit `message` as an error at `location`, for the context's diagnostic handlers.
pub fn emit_error(location: mlir_sys::MlirLocation, message: &str) {
    let message = std::ffi::CString::new(message.replace('\0', " ")).expect("no interior NUL");
    // SAFETY: a live location and a NUL-terminated message, which MLIR copies.
    unsafe { mlir_sys::mlirEmitError(location, message.as_ptr()) }
}

/// Set the discardable unit attribute `name` on `op` (`llvm.emit_c_interface`, a marker).
pub fn set_unit_attribute(op: OperationRef, name: &str) {
    // SAFETY: a live op; a unit attribute of its own context, which MLIR uniques.
    unsafe {
        let ctx = mlir_sys::mlirOperationGetContext(op.to_raw());
        mlir_sys::mlirOperationSetDiscardableAttributeByName(
            op.to_raw(),
            string_ref(name),
            mlir_sys::mlirUnitAttrGet(ctx),
        );
    }
}

/// Whether `op` is a definition: its first region holds a block (a function with a body;
/// `llvm.func @f()` and `func.func private @f()` are declarations). The region count is
/// asked first: melior's error for a missing region prints the op, which is slow.
pub fn is_definition(op: OperationRef) -> bool {
    op.region_count() > 0 && op.region(0).is_ok_and(|r| r.first_block().is_some())
}

/// The closest op around `op` named `name` (`gpu.launch`, `gpu.func`), if any.
pub fn enclosing<'c, 'a>(op: OperationRef<'c, 'a>, name: &str) -> Option<OperationRef<'c, 'a>> {
    // SAFETY: walking up the parents of a live op.
    unsafe {
        let mut p = mlir_sys::mlirOperationGetParentOperation(op.to_raw());
        while !p.ptr.is_null() {
            let parent = OperationRef::from_raw(p);
            if parent.name().as_string_ref().as_str() == Ok(name) {
                return Some(parent);
            }
            p = mlir_sys::mlirOperationGetParentOperation(p);
        }
    }
    None
}

/// `file:line:col` of a location: of a file location itself, of the child of a named one,
/// of the callee of a call site, of the first of a fused one; `loc(unknown)` and other
/// kinds print as MLIR prints them.
pub fn location_text(loc: melior::ir::Location) -> String {
    location_text_at(loc.to_raw(), 0).unwrap_or_else(|| loc.to_string())
}

fn location_text_at(raw: mlir_sys::MlirLocation, depth: u32) -> Option<String> {
    if depth > 16 {
        return None;
    }
    // SAFETY: predicates and accessors on a live location; a fused location's array is
    // filled by the C API with its count of locations.
    unsafe {
        if mlir_sys::mlirLocationIsAFileLineColRange(raw) {
            let file = text_of(mlir_sys::mlirIdentifierStr(
                mlir_sys::mlirLocationFileLineColRangeGetFilename(raw),
            ));
            return Some(format!(
                "{file}:{}:{}",
                mlir_sys::mlirLocationFileLineColRangeGetStartLine(raw),
                mlir_sys::mlirLocationFileLineColRangeGetStartColumn(raw)
            ));
        }
        if mlir_sys::mlirLocationIsAName(raw) {
            return location_text_at(mlir_sys::mlirLocationNameGetChildLoc(raw), depth + 1);
        }
        if mlir_sys::mlirLocationIsACallSite(raw) {
            return location_text_at(mlir_sys::mlirLocationCallSiteGetCallee(raw), depth + 1);
        }
        if mlir_sys::mlirLocationIsAFused(raw) {
            let n = mlir_sys::mlirLocationFusedGetNumLocations(raw) as usize;
            if n == 0 {
                return None;
            }
            let mut all = vec![
                mlir_sys::MlirLocation {
                    ptr: std::ptr::null()
                };
                n
            ];
            mlir_sys::mlirLocationFusedGetLocations(raw, all.as_mut_ptr());
            return location_text_at(all[0], depth + 1);
        }
    }
    None
}

/// The text of a C API string (empty for an empty one, whose data pointer may be null:
/// melior's `StringRef::as_str` builds a slice from it and aborts).
pub fn text_of(s: mlir_sys::MlirStringRef) -> String {
    if s.length == 0 || s.data.is_null() {
        return String::new();
    }
    // SAFETY: a live C API string of `length` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.data as *const u8, s.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value of a string attribute (`sym_name`, an intrinsic's name), or `None` for
/// another kind of attribute; an empty string reads as "".
pub fn string_value(attr: Attribute) -> Option<String> {
    // SAFETY: reading a live attribute through the C API, after checking its kind.
    unsafe {
        let raw = attr.to_raw();
        mlir_sys::mlirAttributeIsAString(raw)
            .then(|| text_of(mlir_sys::mlirStringAttrGetValue(raw)))
    }
}

/// The length of a 1-D vector type; `None` for a scalar (or any other) type.
pub fn vector_lanes(t: Type) -> Option<u64> {
    use melior::ir::TypeLike;
    // SAFETY: reading the shape of a live vector type, after checking its kind.
    (t.is_vector() && unsafe { mlir_sys::mlirShapedTypeGetRank(t.to_raw()) } == 1)
        .then(|| unsafe { mlir_sys::mlirShapedTypeGetDimSize(t.to_raw(), 0) } as u64)
}

/// The root and leaf names of a symbol reference attribute (`@m::@k`; `@k` has both `k`),
/// or `None` for another kind of attribute.
pub fn symbol_path(attr: Attribute) -> Option<(String, String)> {
    // SAFETY: reading a live attribute through the C API, after checking its kind.
    unsafe {
        let raw = attr.to_raw();
        mlir_sys::mlirAttributeIsASymbolRef(raw).then(|| {
            (
                text_of(mlir_sys::mlirSymbolRefAttrGetRootReference(raw)),
                text_of(mlir_sys::mlirSymbolRefAttrGetLeafReference(raw)),
            )
        })
    }
}

/// The first function defined (with a body) under a name LLVM keeps for its intrinsics
/// (`llvm.*`), as an error at its location: LLVM refuses to define one ("llvm intrinsics
/// cannot be defined!", printed with no location). Emitted through the op's context, for
/// the caller's diagnostics; `None` where there is none.
pub fn emit_reserved_llvm_name(root: OperationRef) -> Option<()> {
    use melior::ir::operation::{WalkOrder, WalkResult};
    let mut found = None;
    root.walk(WalkOrder::PreOrder, |op| {
        match op.attribute("sym_name").ok().and_then(string_value) {
            Some(n) if n.starts_with("llvm.") && is_definition(op) => {
                found = Some((op.location().to_raw(), n));
                WalkResult::Interrupt
            }
            _ => WalkResult::Advance,
        }
    });
    let (location, name) = found?;
    emit_error(
        location,
        &format!(
            "@{name:?} is defined under a name LLVM keeps for its intrinsics (llvm.*); rename it"
        ),
    );
    Some(())
}

/// The first op holding a `dense_resource` attribute whose data is missing (a file without
/// its `dialect_resources` section, or printed with `--mlir-elide-elementsattrs-if-larger`)
/// or of another size than its type takes, as an error at its location: MLIR's translation
/// to LLVM IR reads missing data through a null pointer and short data past its end
/// (mlir-translate crashes on both), and misreads long data. Emitted through the op's
/// context, for the caller's diagnostics; `None` where there is none.
pub fn emit_missing_resource(root: OperationRef) -> Option<()> {
    use melior::ir::operation::{WalkOrder, WalkResult};
    let mut found = None;
    root.walk(WalkOrder::PreOrder, |op| {
        for i in 0..op.attribute_count() {
            let Ok((name, attribute)) = op.attribute_at(i) else {
                continue;
            };
            let name = || name.as_string_ref().as_str().unwrap_or("?").to_string();
            let raw = attribute.to_raw();
            // SAFETY: a live attribute of the op.
            let why = if unsafe { lowp_dialect::ffi::lowpAttributeIsMissingResource(raw) } {
                Some(format!(
                    "attribute '{}' is a dense_resource whose data is not in the file (no \
                     dialect_resources entry for it, or it was elided when printed)",
                    name()
                ))
            } else {
                let (mut blob, mut want) = (0i64, 0i64);
                // SAFETY: a live attribute of the op; two writable i64s.
                unsafe { lowp_dialect::ffi::lowpResourceSizeMismatch(raw, &mut blob, &mut want) }
                    .then(|| {
                        format!(
                            "attribute '{}' is a dense_resource of {blob} bytes where its \
                             type takes {want}",
                            name()
                        )
                    })
            };
            if let Some(why) = why {
                found = Some((op.location().to_raw(), why));
                return WalkResult::Interrupt;
            }
        }
        WalkResult::Advance
    });
    let (location, why) = found?;
    emit_error(location, &why);
    Some(())
}

/// The first op under `root` (pre-order) that `translatable` refuses, for an error at its
/// location: the op a pipeline left unconverted. A `builtin.unrealized_conversion_cast` is
/// only a symptom of an unconverted neighbour (and canonicalize often leaves it no
/// location), so it is the answer only where nothing else is left.
pub fn first_untranslatable<'c, 'a>(
    root: OperationRef<'c, 'a>,
    translatable: impl Fn(&str) -> bool,
) -> Option<OperationRef<'c, 'a>> {
    use melior::ir::operation::{WalkOrder, WalkResult};
    let (mut op_found, mut cast_found) = (None, None);
    root.walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        let name = name.as_string_ref().as_str().unwrap_or("");
        if name == "builtin.module" || translatable(name) {
            return WalkResult::Advance;
        }
        if name == "builtin.unrealized_conversion_cast" {
            cast_found.get_or_insert(op.to_raw());
            return WalkResult::Advance;
        }
        op_found = Some(op.to_raw());
        WalkResult::Interrupt
    });
    // SAFETY: collected from the live operation tree under `root` just above.
    op_found
        .or(cast_found)
        .map(|raw| unsafe { OperationRef::from_raw(raw) })
}
