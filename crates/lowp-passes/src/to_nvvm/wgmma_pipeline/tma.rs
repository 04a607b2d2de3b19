//! `kernel=wgmma-tma` is that block (the skinny block's barrier pipeline where M is static
//! and at most 64) with the operands used as stored (E4M3 / E5M2) loaded by TMA: on the
//! host each gets a tensor map (`nvgpu.tma.create.descriptor`, `tensor_map`:
//! boxes of 128 rows x 128 bytes in the 128-byte swizzle, zeros outside the tensor), which
//! the kernel takes as a pointer to global memory. Producer thread 0 fences the barriers'
//! initialization and acquires the maps, then per stage waits for the slot to be empty,
//! announces the boxes' bytes on its full barrier and issues one
//! `cp.async.bulk.tensor.2d` per such operand (`tma_load`, at `box_origin`); the landed
//! bytes complete the barrier's transaction count. Where both operands are direct the full
//! barrier waits for that thread alone (`arrive.expect_tx`); where the other operand is
//! translated (or block scales are staged), the producer warpgroup still copies and
//! translates it (copies and decodes them) and every producer thread arrives (thread 0
//! adds the bytes with `expect_tx`). In the skinny block thread 0
//! arms a full mbarrier per slot and issues the boxes where the copies were issued, and
//! every thread waits on the stage's barrier before the stage's block barrier (split-K
//! included). Two translated operands have nothing for TMA: an error.
//!
//! B multicast (`multicast`, by default where it applies): the square TMA block runs in
//! clusters of 2 along the grid's x, which the grouped order maps to the tiles (bm, bn)
//! and (bm + 1, bn) while M and N have an even number of tiles: both read the same B
//! stages. Each block's producer loads its half of B's stage (64 rows: B's tensor map has
//! 64-row boxes) into both blocks (`.multicast::cluster`, mask 0b11) at the same offset and
//! on the same full barrier of each; a full barrier still expects the whole stage's bytes,
//! half of B's landing from the other block. Since each block writes into the other's
//! slots, a slot is empty once the consumers of both are done with it: lane r of each
//! consumer warp arrives on rank r's empty barrier (`mapa`,
//! `mbarrier.arrive.release.cluster.shared::cluster`; 16 arrivals per phase). The blocks
//! meet at a cluster barrier after the barriers' initialization (none is written before
//! it is initialized) and before they leave (none is arrived on after its block left). L2
//! then serves 24 KiB per stage and block instead of 32 (for FP8).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Type, Value};

use super::memory::{Memory, Shared};
use super::{part, Side, BK};
use crate::ir::Emitter;

/// Operand codes `bits` (bytes, row-major) as a TMA tensor map, made on the host
/// (`nvgpu.tma.create.descriptor`): boxes of `rows` rows x 128 bytes (one stage of the
/// block's rows), landing in the 128-byte swizzle the wgmma descriptors read, zeros where
/// the box leaves the tensor. The kernel takes the pointer the descriptor lowers to (the map
/// in global memory, as the runtime writes it before the launch).
pub(super) fn tensor_map<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bits: Value<'c, 'a>,
    rows: i64,
) -> Value<'c, 'a> {
    tensor_map_of(e, bits, e.int_type(8), [rows, BK])
}

/// The tensor map of the row-major memref `tensor` of `element`s, in boxes of `boxed`
/// ([rows, columns]) in the 128-byte swizzle, zeros where a box leaves the tensor, as the
/// pointer the kernel takes (`tensor_map`).
pub(super) fn tensor_map_of<'c, 'a>(
    e: &Emitter<'c, 'a>,
    tensor: Value<'c, 'a>,
    element: Type<'c>,
    boxed: [i64; 2],
) -> Value<'c, 'a> {
    let ctx = e.ctx();
    let ty = |text: &str| Type::parse(ctx, text).expect("valid tensor map type");
    let unranked = e.val(
        OperationBuilder::new("memref.cast", e.loc())
            .add_operands(&[tensor])
            .add_results(&[ty(&format!("memref<*x{element}>"))])
            .build()
            .expect("valid memref.cast"),
    );
    let [rows, columns] = boxed;
    let map = ty(&format!(
        "!nvgpu.tensormap.descriptor<tensor = memref<{rows}x{columns}x{element}, 3>, \
         swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>"
    ));
    let map = e.val(
        OperationBuilder::new("nvgpu.tma.create.descriptor", e.loc())
            .add_operands(&[unranked, e.index(rows), e.index(columns)])
            .add_results(&[map])
            .build()
            .expect("valid nvgpu.tma.create.descriptor"),
    );
    e.val(
        OperationBuilder::new("builtin.unrealized_conversion_cast", e.loc())
            .add_operands(&[map])
            .add_results(&[ty("!llvm.ptr")])
            .build()
            .expect("valid cast"),
    )
}

/// The TMA box of operand `side`'s stage `s`, innermost coordinate first: the stage's first
/// byte along the row (one code a byte: TMA takes the operands used as stored), the
/// block's first row.
pub(super) fn box_origin<'c, 'a>(
    e: &Emitter<'c, 'a>,
    side: &Side<'c, 'a>,
    s: Value<'c, 'a>,
) -> [Value<'c, 'a>; 2] {
    [e.muli(s, e.index(BK)), side.origin]
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: the
/// box of `map` at `origin` into shared memory at `dst` (an `i64` address, 1024-aligned for
/// the swizzle), its bytes counted on the mbarrier `bar`; with `mask` (`.multicast::cluster`)
/// into the same offset of each block of the cluster in the mask, counted on the mbarrier at
/// `bar`'s offset in each.
pub(super) fn tma_load<'c, 'a>(
    e: &Emitter<'c, 'a>,
    map: Value<'c, 'a>,
    dst: Value<'c, 'a>,
    bar: Value<'c, 'a>,
    origin: [Value<'c, 'a>; 2],
    mask: Option<Value<'c, 'a>>,
) {
    let ctx = e.ctx();
    // The CTA's own shared memory as a shared::cluster address (`cvta`).
    let dst = e.val(
        OperationBuilder::new("llvm.addrspacecast", e.loc())
            .add_operands(&[e.pointer(dst, 3)])
            .add_results(&[Type::parse(ctx, "!llvm.ptr<7>").expect("valid pointer type")])
            .build()
            .expect("valid addrspacecast"),
    );
    let [x, y] = origin.map(|c| e.index_castui(c, e.int_type(32)));
    let mut operands = vec![dst, map, x, y, bar];
    operands.extend(mask);
    e.insert(
        OperationBuilder::new("nvvm.cp.async.bulk.tensor.shared.cluster.global", e.loc())
            .add_operands(&operands)
            .add_attributes(&[(
                Identifier::new(ctx, "operandSegmentSizes"),
                Attribute::parse(
                    ctx,
                    &format!("array<i32: 1, 1, 2, 1, 0, {}, 0, 0>", mask.is_some() as i32),
                )
                .expect("valid segment sizes"),
            )])
            .build()
            .expect("valid nvvm.cp.async.bulk.tensor.shared.cluster.global"),
    );
}

/// The bytes a stage's boxes bring (the operands with a tensor map).
pub(super) fn box_bytes(mem: &Memory, maps: [Option<Value>; 2]) -> i64 {
    (0..2)
        .filter(|&x| maps[x].is_some())
        .map(|x| mem.routes[x].raw_bytes())
        .sum()
}

/// Issue stage `s`'s box of each operand with a tensor map into its place in the slot of
/// ring turn `slot` (`[s, slot]`; `s` itself but for a persistent block), counted on the
/// mbarrier `bar`. With B multicast, the block of cluster rank `rank` loads its part of B's
/// stage (`part`) into every block of the cluster.
#[allow(clippy::too_many_arguments)]
pub(super) fn load_boxes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mem: &Memory,
    shared: Shared<'c, 'a>,
    maps: [Option<Value<'c, 'a>>; 2],
    sides: &[Side<'c, 'a>; 2],
    bar: Value<'c, 'a>,
    [s, slot]: [Value<'c, 'a>; 2],
    rank: Value<'c, 'a>,
) {
    for (x, map) in maps.iter().enumerate() {
        if let Some(map) = *map {
            let dst = mem.copied(e, x, slot);
            let origin = box_origin(e, &sides[x], s);
            if x == 1 && mem.tile.multicast > 1 {
                let (dst, origin) = part(e, mem, dst, origin, rank);
                let everyone = e.int(16, (1 << mem.tile.multicast) - 1);
                tma_load(e, map, shared.address(e, dst), bar, origin, Some(everyone));
            } else {
                tma_load(e, map, shared.address(e, dst), bar, origin, None);
            }
        }
    }
}

/// `fence.proxy.tensormap::generic.acquire.gpu` on a tensor map in global memory: the
/// host's write of it ordered before the TMA unit reads it.
pub(super) fn acquire_tensor_map<'c, 'a>(e: &Emitter<'c, 'a>, map: Value<'c, 'a>) {
    let ctx = e.ctx();
    e.insert(
        OperationBuilder::new("nvvm.fence.proxy.acquire", e.loc())
            .add_operands(&[map, e.i32(128)])
            .add_attributes(&[(
                Identifier::new(ctx, "scope"),
                Attribute::parse(ctx, "#nvvm.mem_scope<gpu>").expect("valid scope"),
            )])
            .build()
            .expect("valid nvvm.fence.proxy.acquire"),
    );
}

/// A TMA box load on the CPU, as the PTX ISA's tile mode defines it for `tensor_map`'s
/// maps: box element (row r, byte b), r < `rows`, b < 128, is the operand's byte at
/// `origin` + (b, r), zero outside the tensor (element by element); it lands at byte r *
/// 128 + b of the box from `dst`, in the 128-byte swizzle (address bits 4-6 xor bits 7-9;
/// `dst` is 1024-aligned).
pub(super) fn emulated_tma<'c, 'a>(
    e: &Emitter<'c, 'a>,
    shared: Shared<'c, 'a>,
    side: &Side<'c, 'a>,
    rows: i64,
    dst: Value<'c, 'a>,
    origin: [Value<'c, 'a>; 2],
) {
    let (zero, one, i32t) = (e.index(0), e.index(1), e.int_type(32));
    let [x0, y0] = origin;
    e.for_loop(zero, e.index(rows), one, &[], |e, r, _| {
        let y = e.addi(y0, r);
        let row_inside = e.cmpi(CmpiPredicate::Ult, y, side.rows);
        let y = e.minui(y, e.subi(side.rows, one));
        for ch in 0..BK / 16 {
            let words: Vec<Value> = (0..4)
                .map(|w| {
                    (0..4).fold(e.i32(0), |acc, b| {
                        let x = e.addi(x0, e.index(16 * ch + 4 * w + b));
                        let row_bytes = e.index(side.row_bytes);
                        let inside = e.andi(row_inside, e.cmpi(CmpiPredicate::Ult, x, row_bytes));
                        let x = e.minui(x, e.subi(row_bytes, one));
                        let byte = e.extui(e.load(side.bits, &[y, x]), i32t);
                        let byte = e.select(inside, byte, e.i32(0));
                        e.ori(acc, e.shli(byte, e.i32(8 * b as u32)))
                    })
                })
                .collect();
            let linear = e.addi(e.muli(r, e.index(BK)), e.index(16 * ch));
            shared.store4(e, e.addi(dst, tile_mode_swizzle(e, linear)), &words);
        }
        vec![]
    });
}

/// Where TMA's tile mode places byte `linear` (row-major, 128-byte rows) of a box in the
/// 128-byte swizzle, as the PTX ISA defines it: address bits 4-6 xor bits 7-9 (the box
/// 1024-aligned). The box loads' emulation states the swizzle this way, apart from the
/// kernels' `memory::swizzled`, so that it checks them; `store-c=tma`'s staging writes by
/// it (`StoreC::in_box`).
pub(super) fn tile_mode_swizzle<'c, 'a>(
    e: &Emitter<'c, 'a>,
    linear: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let row_of_atom = e.andi(e.shrui(linear, e.index(7)), e.index(7));
    e.xori(linear, e.shli(row_of_atom, e.index(4)))
}
