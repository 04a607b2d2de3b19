//! `store-c=tma`: the warp-specialized square block's epilogue (`kernel=wgmma-tma` and
//! `wgmma-specialized`, `persistent=on` included) through shared memory and TMA instead of
//! each thread's `st.global` of its accumulators. Each consumer warpgroup writes its 64
//! rows of C (scales, globals and bias applied, as stored: f32, f16 or bf16) into a
//! staging area of its own after the ring, as boxes of 64 rows x 128 bytes in the 128-byte
//! swizzle (a warp's 8-byte stores of 8 rows x 32 bytes then land in distinct bank groups:
//! two wavefronts, the least for 256 bytes), makes them visible to the async proxy
//! (`fence.proxy.async.shared::cta`), meets at a named barrier of its own (2 + its index,
//! 128 threads), and its first thread stores the boxes with
//! `cp.async.bulk.tensor.2d.global.shared::cta` on C's tensor map (made on the host:
//! `nvgpu.tma.create.descriptor` of C, boxes of 64 rows x 128 bytes); TMA writes only the
//! elements inside C (a box partly or wholly past M or N is clipped; the staged places of
//! results outside C are left as they were). The warpgroup is then free: in the persistent
//! block it goes on to the next tile's stages while TMA drains the staging area, and waits
//! for that read (`cp.async.bulk.wait_group.read 0`, then the named barrier) only before it
//! writes the area again; before the block ends the same wait (shared memory outlives the
//! read).
//!
//! Where it applies: the square warp-specialized block, not split, C a static row-major
//! 2-D memref of f32, f16 or bf16 whose rows are whole 16 bytes (TMA's strides), and the
//! staging area (32 KiB a warpgroup for 128 f32 columns) fits after the block's shared
//! memory (the ring keeps its stages: `persistent=on stages=6`, 197 KiB, does not take it).
//! Elsewhere the epilogue stores as before (`Kernel::epilogue`).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::{MemRefType, ShapedTypeLike};
use melior::ir::{Attribute, Identifier, TypeLike, Value, ValueLike};

use super::memory::{Memory, Shared};
use super::tma::{acquire_tensor_map, tile_mode_swizzle};
use super::{Tile, ATOM, ROW};
use crate::chip::Chip;
use crate::ir::Emitter;
use crate::matrix_kernel::{Instr, Kernel, Lane};
use crate::to_nvvm::wgmma::{self, Wgmma};

/// The staging area of `store-c=tma` (`Memory::store_c`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct StoreC {
    /// Bytes of C's elements (4 for f32, 2 for f16 and bf16).
    pub(super) element: i64,
    /// The area's first byte (1024-aligned, after the rest of the block's memory).
    pub(super) staging: i64,
    /// The block's columns of C (128 or 192).
    pub(super) columns: i64,
}

/// Rows of a warpgroup's part of C (the instruction's M).
const ROWS: i64 = wgmma::BM;

impl StoreC {
    /// Where `kn`'s op and the block of `mem` take it (module header), its area placed
    /// after `mem.bytes` within the chip's shared memory.
    pub(super) fn place(kn: &Kernel, mem: &Memory, chip: &Chip) -> Option<Self> {
        let tile: Tile = mem.tile;
        if !mem.specialized || tile.swapped || tile.splits > 1 {
            return None;
        }
        let out = kn.ops.o.out;
        let t = MemRefType::try_from(out.r#type()).ok()?;
        let element = match t.element().to_string().as_str() {
            "f32" => 4,
            "f16" | "bf16" => 2,
            _ => return None,
        };
        // SAFETY: a live memref type's layout map.
        let identity = unsafe {
            mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(t.to_raw()))
        };
        let [m, n] = [0, 1].map(|d| crate::ir::static_dim(out.r#type(), d));
        let (Some(_), Some(n)) = (m, n) else {
            return None;
        };
        let columns = tile.rows[1];
        let store = StoreC {
            element,
            staging: (mem.bytes + ATOM - 1) / ATOM * ATOM,
            columns,
        };
        let fits = store.end(tile.warpgroups) + 1024 <= chip.shared_kib as i64 * 1024;
        (identity && (n * element) % 16 == 0 && columns % store.box_columns() == 0 && fits)
            .then_some(store)
    }

    /// The area's end (`warpgroups` parts).
    pub(super) fn end(&self, warpgroups: i64) -> i64 {
        self.staging + warpgroups * self.part_bytes()
    }

    /// Columns of a box: 128 bytes of them, the swizzle's span.
    fn box_columns(&self) -> i64 {
        ROW / self.element
    }

    /// Bytes of a box (64 rows of 128 bytes; a multiple of the swizzle's 1024-byte atom).
    fn box_bytes(&self) -> i64 {
        ROWS * ROW
    }

    /// Bytes of a warpgroup's part: its boxes side by side.
    fn part_bytes(&self) -> i64 {
        self.columns / self.box_columns() * self.box_bytes()
    }

    /// The first byte of warpgroup `warpgroup`'s part.
    fn part<'c, 'a>(&self, e: &Emitter<'c, 'a>, warpgroup: Value<'c, 'a>) -> Value<'c, 'a> {
        e.addi(
            e.index(self.staging),
            e.muli(warpgroup, e.index(self.part_bytes())),
        )
    }

    /// Where element (`r`, `c`) of a part (row and column within the warpgroup's 64 x
    /// `columns`) is, from the part's first byte `part`: in box c / box_columns, at row r
    /// and column c % box_columns of it (`in_box`).
    fn staged_at<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        part: Value<'c, 'a>,
        r: Value<'c, 'a>,
        c: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let per_box = e.index(self.box_columns());
        let (b, within) = (e.divui(c, per_box), e.remui(c, per_box));
        let first = e.addi(part, e.muli(b, e.index(self.box_bytes())));
        e.addi(first, self.in_box(e, r, within))
    }

    /// Element (`r`, `c`)'s offset in a box, as TMA's tile mode places it in the 128-byte
    /// swizzle (`tma::tile_mode_swizzle`). (Written as `memory::swizzled` does the operands'
    /// tiles, chunk index xor row, the persistent block's epilogue spilled 40 bytes under
    /// ptxas 12.9.)
    fn in_box<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        r: Value<'c, 'a>,
        c: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let linear = e.addi(e.muli(r, e.index(ROW)), e.muli(c, e.index(self.element)));
        tile_mode_swizzle(e, linear)
    }

    /// The boxes of warpgroup `warpgroup`'s part, whose lane is `l`: each box's first byte
    /// and its origin in C (column, row: innermost first).
    fn boxes<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        warpgroup: Value<'c, 'a>,
        l: &Lane<'c, 'a>,
    ) -> Vec<(Value<'c, 'a>, [Value<'c, 'a>; 2])> {
        let part = self.part(e, warpgroup);
        (0..self.columns / self.box_columns())
            .map(|b| {
                let at = e.addi(part, e.index(b * self.box_bytes()));
                let col = e.addi(l.col0, e.index(b * self.box_columns()));
                (at, [col, l.row0])
            })
            .collect()
    }

    /// A lane's results (`Kernel::epilogue_values`, the instruction's runs of 2 columns)
    /// written into warpgroup `warpgroup`'s part: a run as its 8 (f32) or 4 bytes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stage<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        instr: &Wgmma,
        shared: Shared<'c, 'a>,
        l: &Lane<'c, 'a>,
        warpgroup: Value<'c, 'a>,
        acc: &[Value<'c, 'a>],
    ) {
        let part = self.part(e, warpgroup);
        let run = instr.column_run();
        debug_assert!(run == 2 && acc.len().is_multiple_of(run));
        let i32t = e.int_type(32);
        let once = kn.lane_values(e);
        kn.epilogue_values(e, l, acc, run, once, &|e, values, row, col| {
            let at = self.staged_at(e, part, e.subi(row, l.row0), e.subi(col, l.col0));
            let words: Vec<Value> = if self.element == 4 {
                values.iter().map(|&v| e.bitcast(v, i32t)).collect()
            } else {
                let i16t = e.int_type(16);
                let half = |v| e.extui(e.bitcast(v, i16t), i32t);
                vec![e.ori(half(values[0]), e.shli(half(values[1]), e.i32(16)))]
            };
            shared.store_words(e, at, &words);
        });
    }

    /// The consumer warpgroup's epilogue on the GPU: wait for the area's last read where
    /// `again` (the persistent block, whose last tile's stores may still be reading it; a
    /// wait with none in flight returns at once), stage the lane's results,
    /// fence, meet, and the warpgroup's first thread stores its boxes on `map` (C's tensor
    /// map) as one bulk group.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn epilogue<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        instr: &Wgmma,
        shared: Shared<'c, 'a>,
        l: &Lane<'c, 'a>,
        warpgroup: Value<'c, 'a>,
        acc: &[Value<'c, 'a>],
        map: Value<'c, 'a>,
        again: bool,
    ) {
        let issuer = issuer(e, l);
        let id = e.addi(e.i32(2), e.index_castui(warpgroup, e.int_type(32)));
        if again {
            e.if_then(issuer, |e| wait_read(e));
            named_barrier(e, id, wgmma::THREADS);
        }
        self.stage(e, kn, instr, shared, l, warpgroup, acc);
        wgmma::fence_proxy_async(e);
        named_barrier(e, id, wgmma::THREADS);
        let boxes = self.boxes(e, warpgroup, l);
        e.if_then(issuer, |e| {
            // (The host's write of the map ordered before TMA reads it, as for the
            // operands' maps.)
            acquire_tensor_map(e, map);
            for (at, origin) in boxes {
                tma_store(e, map, shared.address(e, at), origin);
            }
            e.bare("nvvm.cp.async.bulk.commit.group", &[]);
        });
    }

    /// Before the block ends: the warpgroup's first thread waits until its stores have
    /// read the area.
    pub(super) fn finish<'c, 'a>(&self, e: &Emitter<'c, 'a>, l: &Lane<'c, 'a>) {
        e.if_then(issuer(e, l), |e| wait_read(e));
    }

    /// The TMA stores on the CPU, as the PTX ISA's tile mode defines them: element (r, c)
    /// of each box of warpgroup w's part (`boxes`, from the warpgroup's lane: `lanes`, one
    /// a warpgroup) goes to C's (origin row + r, origin column + c) where that is inside
    /// C, from its place in the swizzle (`in_box`).
    pub(super) fn emulated_store<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        kn: &Kernel<'_, 'c, 'a>,
        shared: Shared<'c, 'a>,
        lanes: &[Lane<'c, 'a>],
    ) {
        let (zero, one) = (e.index(0), e.index(1));
        let out = kn.ops.o.out;
        let i32t = e.int_type(32);
        for (w, l) in lanes.iter().enumerate() {
            for (at, [x0, y0]) in self.boxes(e, e.index(w as i64), l) {
                e.for_loop(zero, e.index(ROWS), one, &[], |e, r, _| {
                    e.for_loop(zero, e.index(self.box_columns()), one, &[], |e, c, _| {
                        let (row, col) = (e.addi(y0, r), e.addi(x0, c));
                        let inside = e.andi(
                            e.cmpi(CmpiPredicate::Ult, row, kn.ops.m),
                            e.cmpi(CmpiPredicate::Ult, col, kn.ops.n),
                        );
                        e.if_then(inside, |e| {
                            let from = e.addi(at, self.in_box(e, r, c));
                            let word = shared.load_words(e, e.andi(from, e.index(!3)), 1)[0];
                            let v = if self.element == 4 {
                                e.bitcast(word, e.f32_type())
                            } else {
                                let shift = e.index_castui(e.andi(from, e.index(2)), i32t);
                                let bits = e.shrui(word, e.muli(shift, e.i32(8)));
                                e.bitcast(e.trunci(bits, e.int_type(16)), kn.ops.out_type)
                            };
                            e.store(v, out, &[row, col]);
                        });
                        vec![]
                    });
                    vec![]
                });
            }
        }
    }
}

/// C's tensor map for `store-c=tma`, made on the host (`nvgpu.tma.create.descriptor`):
/// boxes of 64 rows x 128 bytes in the 128-byte swizzle; the kernel takes the pointer the
/// descriptor lowers to, as for the operands' maps (`tma::tensor_map`).
pub(super) fn c_tensor_map<'c, 'a>(
    e: &Emitter<'c, 'a>,
    store: &StoreC,
    out: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let element = MemRefType::try_from(out.r#type())
        .map(|t| t.element())
        .expect("C is a memref (StoreC::place)");
    super::tma::tensor_map_of(e, out, element, [ROWS, store.box_columns()])
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group`: the box at shared-memory
/// address `src` (an `i64`, 1024-aligned for the swizzle) to `map`'s tensor at `origin`
/// (innermost coordinate first), the elements inside the tensor only.
fn tma_store<'c, 'a>(
    e: &Emitter<'c, 'a>,
    map: Value<'c, 'a>,
    src: Value<'c, 'a>,
    origin: [Value<'c, 'a>; 2],
) {
    let ctx = e.ctx();
    let [x, y] = origin.map(|c| e.index_castui(c, e.int_type(32)));
    e.insert(
        OperationBuilder::new("nvvm.cp.async.bulk.tensor.global.shared.cta", e.loc())
            .add_operands(&[map, e.pointer(src, 3), x, y])
            .add_attributes(&[(
                Identifier::new(ctx, "operandSegmentSizes"),
                Attribute::parse(ctx, "array<i32: 1, 1, 2, 0, 0>").expect("valid segment sizes"),
            )])
            .build()
            .expect("valid nvvm.cp.async.bulk.tensor.global.shared.cta"),
    );
}

/// Whether lane `l` is its warpgroup's first thread, the one that issues its stores.
fn issuer<'c, 'a>(e: &Emitter<'c, 'a>, l: &Lane<'c, 'a>) -> Value<'c, 'a> {
    e.cmpi(CmpiPredicate::Eq, l.lane, e.index(0))
}

/// `cp.async.bulk.wait_group.read 0`: this thread's bulk stores have read their shared
/// memory.
fn wait_read(e: &Emitter) {
    e.bare(
        "nvvm.cp.async.bulk.wait_group",
        &[("group", "0 : i32"), ("read", "unit")],
    );
}

/// `bar.sync id, threads`: a named barrier (an `i32` id) of `threads` threads.
pub(super) fn named_barrier<'c, 'a>(e: &Emitter<'c, 'a>, id: Value<'c, 'a>, threads: i64) {
    e.insert(
        OperationBuilder::new("nvvm.barrier", e.loc())
            .add_operands(&[id, e.i32(threads as u32)])
            .add_attributes(&[(
                Identifier::new(e.ctx(), "operandSegmentSizes"),
                Attribute::parse(e.ctx(), "array<i32: 1, 1, 0>").expect("valid segments"),
            )])
            .build()
            .expect("valid nvvm.barrier"),
    );
}
