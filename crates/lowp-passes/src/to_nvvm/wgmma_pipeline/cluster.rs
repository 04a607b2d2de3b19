//! Clusters: the cluster-wide barrier, addresses in another block's shared memory
//! (`mapa`), arrivals on every block's empty barrier (B multicast), and split-K: each
//! block of a cluster sums its range of the stages, rank 0 adds the others' partial sums
//! in rank order through distributed shared memory (`gather_splits`).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Type, Value};

use super::memory::Shared;
use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::matrix_kernel::{Kernel, Lane};

/// The stages (of `bk` codes) `[first, last)` of K that split `rank` of `splits` sums:
/// `ceil(stages / splits)` each, the last ones possibly fewer or none.
pub(super) fn stage_range<'c, 'a>(
    e: &Emitter<'c, 'a>,
    k: Value<'c, 'a>,
    bk: i64,
    rank: Value<'c, 'a>,
    splits: i64,
) -> (Value<'c, 'a>, Value<'c, 'a>) {
    let stages = ceil_div(e, k, e.index(bk));
    if splits == 1 {
        return (e.index(0), stages);
    }
    let per = ceil_div(e, stages, e.index(splits));
    let first = e.minui(e.muli(rank, per), stages);
    (first, e.minui(e.addi(first, per), stages))
}

/// Byte offset of thread `tid`'s accumulator `x` in the block's shared memory while the
/// splits are gathered (the ring is free by then): accumulator-major, a word per thread.
pub(super) fn gathered<'c, 'a>(
    e: &Emitter<'c, 'a>,
    threads: i64,
    tid: Value<'c, 'a>,
    x: usize,
) -> Value<'c, 'a> {
    let word = e.addi(e.index(x as i64 * threads), tid);
    e.muli(word, e.index(4))
}

/// Split-K's end: every block of the cluster but rank 0 leaves its partial sums in its
/// shared memory; after a cluster barrier (release / acquire), rank 0 adds ranks 1, 2, ..
/// in order, read through distributed shared memory (`mapa`, `ld.shared::cluster`), and
/// stores C; a second cluster barrier keeps the others' memory until it has read.
/// `[threads, splits]`: the block's computing threads and the cluster's blocks. With one
/// split (no cluster), the block's epilogue alone.
#[allow(clippy::too_many_arguments)]
pub(super) fn gather_splits<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    [threads, splits]: [i64; 2],
    shared: Shared<'c, 'a>,
    l: &Lane<'c, 'a>,
    tid: Value<'c, 'a>,
    rank: Value<'c, 'a>,
    acc: &[Value<'c, 'a>],
) {
    if splits == 1 {
        return kn.epilogue(e, l, acc);
    }
    let zero = e.index(0);
    let f32t = e.f32_type();
    let local = |e: &Emitter<'c, 'a>, x: usize| {
        e.pointer(shared.address(e, gathered(e, threads, tid, x)), 3)
    };
    // Every thread's instructions have completed (each waited): the ring may be reused.
    e.bare("gpu.barrier", &[]);
    e.if_then(e.cmpi(CmpiPredicate::Ne, rank, zero), |e| {
        for (x, &v) in acc.iter().enumerate() {
            e.insert(
                OperationBuilder::new("llvm.store", e.loc())
                    .add_operands(&[v, local(e, x)])
                    .build()
                    .expect("valid llvm.store"),
            );
        }
    });
    cluster_sync(e);
    e.if_then(e.cmpi(CmpiPredicate::Eq, rank, zero), |e| {
        let mut sum = acc.to_vec();
        for peer in 1..splits {
            for (x, s) in sum.iter_mut().enumerate() {
                let remote = mapa(e, local(e, x), e.i32(peer as u32));
                let v = e.val(
                    OperationBuilder::new("llvm.load", e.loc())
                        .add_operands(&[remote])
                        .add_results(&[f32t])
                        .build()
                        .expect("valid llvm.load"),
                );
                *s = e.addf(*s, v);
            }
        }
        kn.epilogue(e, l, &sum);
    });
    cluster_sync(e);
}

/// A barrier of the whole cluster (`barrier.cluster.arrive` / `wait`, release / acquire),
/// every thread of each block.
pub(super) fn cluster_sync<'c, 'a>(e: &Emitter<'c, 'a>) {
    e.bare("nvvm.cluster.arrive", &[("aligned", "unit")]);
    e.bare("nvvm.cluster.wait", &[("aligned", "unit")]);
}

/// `mapa`: the address `local` (a shared-memory pointer) has in the block of cluster rank
/// `rank` (an `i32`), as a `shared::cluster` pointer.
pub(super) fn mapa<'c, 'a>(
    e: &Emitter<'c, 'a>,
    local: Value<'c, 'a>,
    rank: Value<'c, 'a>,
) -> Value<'c, 'a> {
    e.val(
        OperationBuilder::new("nvvm.mapa", e.loc())
            .add_operands(&[local, rank])
            .add_results(&[Type::parse(e.ctx(), "!llvm.ptr<7>").expect("valid pointer type")])
            .build()
            .expect("valid nvvm.mapa"),
    )
}

/// A consumer warp's arrival on the empty barrier `bar` of each block of a cluster of
/// `cluster`: lane r on rank r's (`mapa`; `mbarrier.arrive.release.cluster.shared::cluster`).
pub(super) fn release_in_cluster<'c, 'a>(
    e: &Emitter<'c, 'a>,
    bar: Value<'c, 'a>,
    tid: Value<'c, 'a>,
    cluster: i64,
) {
    let ctx = e.ctx();
    let lane = e.remui(tid, e.index(32));
    e.if_then(e.cmpi(CmpiPredicate::Ult, lane, e.index(cluster)), |e| {
        let remote = mapa(e, bar, e.index_castui(lane, e.int_type(32)));
        e.insert(
            OperationBuilder::new("nvvm.mbarrier.arrive", e.loc())
                .add_operands(&[remote])
                .add_attributes(&[(
                    Identifier::new(ctx, "scope"),
                    Attribute::parse(ctx, "#nvvm.mem_scope<cluster>").expect("valid scope"),
                )])
                .build()
                .expect("valid nvvm.mbarrier.arrive"),
        );
    });
}
