//! The emulation (`emulate=true`) runs the same chunk assignment, offsets, translations,
//! slot ring and descriptors on the CPU: the copies and translations into a buffer standing
//! for the shared memory (its base at address 0), TMA's box loads as the PTX ISA defines
//! the tile mode (`emulated_tma`: from the same box origins, element by element, the
//! swizzle by address bits), each instruction by `wgmma::emulated_wgmma` decoding the
//! descriptors (swizzle included), phases one after the other; with `store-c=tma` the
//! epilogue's staging area and the TMA stores of C from it (`StoreC::emulated_store`).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::Value;

use super::cluster::stage_range;
use super::fold::{fold_scan, Folded};
use super::memory::{clear_halves, each_chunk, Memory, Shared};
use super::stage::{
    decode_scales, each_scale_row, emulated_scale_word, scale_address, scale_at, scale_cell,
    settle_scales, staged_readers, translate_stage,
};
use super::tma::{box_origin, emulated_tma};
use super::{descriptors_at, lane, part, segment_shape, sides, stage_descriptors, BK};
use crate::ir::Emitter;
use crate::matrix_kernel::Kernel;
use crate::to_nvvm::wgmma::{self, Wgmma};

/// One block on the CPU: per stage the copies of all 256 threads into the ring at the same
/// slots and offsets (zeros where the GPU copies 0 bytes), the staged operands' translation
/// by the same threads, then per warpgroup and segment the instructions on the descriptors
/// (`wgmma::emulated_wgmma`) and the promotion; accumulators in memory. `cluster`: with B
/// multicast, the tiles (bm, bn) of the cluster's blocks by rank, whose parts of B's boxes
/// land in this block (rank r's part from rank r's box origin).
#[allow(clippy::too_many_arguments)]
pub(super) fn emulated_block<'c, 'a>(
    e: &Emitter<'c, 'a>,
    kn: &Kernel<'_, 'c, 'a>,
    mem: &Memory,
    instr: &Wgmma,
    bm: Value<'c, 'a>,
    bn: Value<'c, 'a>,
    cluster: &[(Value<'c, 'a>, Value<'c, 'a>)],
) {
    let (zero, one) = (e.index(0), e.index(1));
    let (f32t, i32t) = (e.f32_type(), e.int_type(32));
    let (shared, buffer) = Shared::emulated(e, mem.bytes);
    let (computing, count) = (mem.tile.threads(), instr.accumulators() as i64);
    // The accumulators of every split (rank-major).
    let splits = mem.tile.splits;
    let acc_m = e.alloca(f32t, splits * computing * count);
    let part_m = e.alloca(f32t, wgmma::THREADS * count);
    let sides = sides(e, kn, mem, bm, bn);
    let k = kn.ops.k;
    let at = |e: &Emitter<'c, 'a>, t: Value<'c, 'a>, x: i64| {
        e.addi(e.muli(t, e.index(count)), e.index(x))
    };
    let threads = |e: &Emitter<'c, 'a>, n: i64, body: &dyn Fn(&Emitter<'c, 'a>, Value<'c, 'a>)| {
        e.for_loop(zero, e.index(n), one, &[], |e, t, _| {
            body(e, t);
            vec![]
        });
    };
    let clear = |e: &Emitter<'c, 'a>, mem, n| {
        threads(e, n, &|e, t| {
            for x in 0..count {
                e.store(e.f32(0.0), mem, &[at(e, t, x)]);
            }
        })
    };
    clear(e, acc_m, splits * computing);
    threads(e, mem.copiers, &|e, t| clear_halves(e, mem, shared, t));
    // The cluster's blocks one after the other, each on its range of stages.
    e.for_loop(zero, e.index(splits), one, &[], |e, rank, _| {
        let (first, last) = stage_range(e, k, mem.bk(), rank, splits);
        let held = e.muli(rank, e.index(computing));
        // The stages, with the block scales folded into the codes or not (`Fold`).
        let stages = |e: &Emitter<'c, 'a>, fold: Folded| {
            let (seg, per_seg) = if fold.folds() {
                (BK, BK / 32)
            } else {
                segment_shape(kn.plan)
            };
            e.for_loop(first, last, one, &[], |e, s, _| {
                let k0 = e.muli(s, e.index(mem.bk()));
                // The copies: 16 bytes each, zeros where the chunk is outside.
                threads(e, mem.copiers, &|e, t| {
                    for (x, side) in sides.iter().enumerate() {
                        let (route, copied) = (mem.routes[x], mem.copied(e, x, s));
                        if mem.tma && !route.staged {
                            continue;
                        }
                        each_chunk(e, route, mem.copiers, t, side, k, k0, |e, c| {
                            // From the byte the GPU's copy reads (`Chunk::lead` and all).
                            let from = c.source_byte(e);
                            let row_bytes = e.index(side.row_bytes);
                            let row = e.divui(from, row_bytes);
                            let first = e.remui(from, row_bytes);
                            let words: Vec<Value> = (0..4)
                                .map(|w| {
                                    let word = (0..4).fold(e.i32(0), |acc, b| {
                                        let at = e.addi(first, e.index(4 * w + b));
                                        let byte = e.load(side.bits, &[row, at]);
                                        e.ori(acc, e.shli(e.extui(byte, i32t), e.i32(8 * b as u32)))
                                    });
                                    e.select(c.inside, word, e.i32(0))
                                })
                                .collect();
                            shared.store4(e, e.addi(copied, c.slot_offset(e)), &words);
                            if route.block_scaled {
                                // The chunk's scale word, from the bytes the GPU's copy reads.
                                let scaled = [&kn.ops.sa, &kn.ops.sb][x];
                                let at = scale_cell(e, scaled, side, c.r, k0);
                                let word = emulated_scale_word(e, scaled, at);
                                let word = e.select(c.inside, word, e.i32(0));
                                let to = mem.chunk_scales(e, x, s, c.slot_offset(e));
                                shared.store_words(e, to, &[word]);
                            }
                        });
                    }
                });
                if mem.tma {
                    for (x, side) in sides.iter().enumerate() {
                        let (route, copied) = (mem.routes[x], mem.copied(e, x, s));
                        if route.staged {
                            continue;
                        }
                        if x == 1 && !cluster.is_empty() {
                            for (r, &(pm, pn)) in cluster.iter().enumerate() {
                                let theirs = &self::sides(e, kn, mem, pm, pn)[1];
                                let box_ = box_origin(e, theirs, s);
                                let (dst, origin) = part(e, mem, copied, box_, e.index(r as i64));
                                let rows = route.rows / mem.tile.multicast;
                                emulated_tma(e, shared, theirs, rows, dst, origin);
                            }
                        } else {
                            emulated_tma(
                                e,
                                shared,
                                side,
                                route.rows,
                                copied,
                                box_origin(e, side, s),
                            );
                        }
                    }
                }
                // The staged scales' copies (the bytes as stored), as each row's thread makes
                // them; a window from the word that holds the first (bytes outside the
                // scales, which no decoded value takes: zeros).
                threads(e, mem.copiers, &|e, t| {
                    each_scale_row(e, mem, t, |e, x, st, r| {
                        let scaled = [&kn.ops.sa, &kn.ops.sb][x];
                        let at = scale_at(e, scaled, st, &sides[x], r, k0);
                        let at = if st.window {
                            let address = scale_address(e, scaled, at);
                            let skip =
                                e.index_castui(e.andi(address, e.int(64, 3)), e.index_type());
                            e.subi(at, skip)
                        } else {
                            at
                        };
                        let at = e.divui(at, e.index(st.size));
                        let columns = e.dim(scaled.scales, 1);
                        let cells = e.muli(e.dim(scaled.scales, 0), columns);
                        let value = |i: i64| {
                            let cell = e.addi(at, e.index(i));
                            let inside = e.cmpi(CmpiPredicate::Ult, cell, cells);
                            let cell = e.minui(cell, e.subi(cells, one));
                            let (sr, sc) = (e.divui(cell, columns), e.remui(cell, columns));
                            let v = e.load(scaled.scales, &[sr, sc]);
                            let zero = if st.size == 1 {
                                e.int(8, 0)
                            } else {
                                e.f32(0.0)
                            };
                            e.select(inside, v, zero)
                        };
                        let words: Vec<Value> = if st.size == 1 {
                            (0..st.row_bytes() / 4)
                                .map(|w| {
                                    (0..4).fold(e.i32(0), |acc, b| {
                                        let byte = e.extui(value(4 * w + b), i32t);
                                        e.ori(acc, e.shli(byte, e.i32(8 * b as u32)))
                                    })
                                })
                                .collect()
                        } else {
                            (0..st.row_bytes() / 4)
                                .map(|g| e.bitcast(value(g), i32t))
                                .collect()
                        };
                        shared.store_words(e, st.copied(e, mem.stages, s, r), &words);
                    });
                });
                // (Folded, the windows settled, each row's by its thread, before any reads.)
                if mem.settles() {
                    threads(e, mem.copiers, &|e, t| {
                        settle_scales(e, kn, mem, shared, &sides, t, s);
                    });
                }
                threads(e, mem.copiers, &|e, t| {
                    translate_stage(e, mem, shared, &sides, k, t, s, fold);
                    decode_scales(e, kn, mem, shared, &sides, t, s, fold);
                });
                // (The warpgroups as a loop: one copy of the segments' code.)
                let warpgroups = e.index(mem.tile.warpgroups);
                e.for_loop(zero, warpgroups, one, &[], |e, warpgroup, _| {
                    let tiles = stage_descriptors(e, mem, shared, warpgroup, s);
                    for g in 0..mem.bk() / seg {
                        let k0 = e.addi(k0, e.index(g * seg));
                        // (The f16 route's instructions sum into the accumulators.)
                        let into = kn.plan.in_codes;
                        let held_by = |e: &Emitter<'c, 'a>, t| {
                            let tid = e.addi(t, e.muli(warpgroup, e.index(wgmma::THREADS)));
                            (tid, e.addi(held, tid))
                        };
                        e.if_then(e.cmpi(CmpiPredicate::Ult, k0, k), |e| {
                            if into {
                                threads(e, wgmma::THREADS, &|e, t| {
                                    let held = held_by(e, t).1;
                                    for x in 0..count {
                                        let v = e.load(acc_m, &[at(e, held, x)]);
                                        e.store(v, part_m, &[at(e, t, x)]);
                                    }
                                });
                            } else {
                                clear(e, part_m, wgmma::THREADS);
                            }
                            for j in 0..per_seg {
                                let at = g * seg + instr.k() * j;
                                let (da, db) = descriptors_at(e, mem, &tiles, at);
                                wgmma::emulated_wgmma(e, instr, [da, db], [buffer, buffer], part_m);
                            }
                            threads(e, wgmma::THREADS, &|e, t| {
                                let (tid, held) = held_by(e, t);
                                let l = lane(e, mem.tile, tid, bm, bn);
                                let tid = held;
                                if into {
                                    for x in 0..count {
                                        let v = e.load(part_m, &[at(e, t, x)]);
                                        e.store(v, acc_m, &[at(e, tid, x)]);
                                    }
                                    return;
                                }
                                let acc: Vec<Value> = (0..count)
                                    .map(|x| e.load(acc_m, &[at(e, tid, x)]))
                                    .collect();
                                let part: Vec<Value> =
                                    (0..count).map(|x| e.load(part_m, &[at(e, t, x)])).collect();
                                let staged = staged_readers(kn, mem, shared, k0, fold);
                                // (The scales constant along K as the GPU's consumers
                                // take them: loaded once, here per promotion.)
                                let constant = kn.constant_scales(e, &l, count as usize);
                                let scales = kn.segment_scales(
                                    e,
                                    &l,
                                    k0,
                                    count as usize,
                                    &staged,
                                    constant.as_ref(),
                                );
                                for (x, v) in kn
                                    .promote_loaded(e, &acc, &part, &scales)
                                    .into_iter()
                                    .enumerate()
                                {
                                    e.store(v, acc_m, &[at(e, tid, x as i64)]);
                                }
                            });
                        });
                    }
                    vec![]
                });
                vec![]
            });
        };
        match mem.fold {
            Some(fold) => {
                let scan = fold_scan(e, kn, mem, &fold, shared, &sides, zero, first, last);
                scan.branches(e, &[], |e, fold| {
                    stages(e, fold);
                    vec![]
                });
            }
            None => stages(e, Folded::No),
        }
        vec![]
    });
    // Rank 0 adds ranks 1, 2, .. in order, as on the GPU.
    threads(e, computing, &|e, t| {
        let l = lane(e, mem.tile, t, bm, bn);
        let acc: Vec<Value> = (0..count)
            .map(|x| {
                (1..splits).fold(e.load(acc_m, &[at(e, t, x)]), |sum, r| {
                    let held = e.addi(t, e.index(r * computing));
                    e.addf(sum, e.load(acc_m, &[at(e, held, x)]))
                })
            })
            .collect();
        match mem.store_c {
            // (`store-c=tma`: into the staging area, stored below as TMA stores it.)
            Some(store) => {
                let warpgroup = e.divui(t, e.index(wgmma::THREADS));
                store.stage(e, kn, instr, shared, &l, warpgroup, &acc);
            }
            None => kn.epilogue(e, &l, &acc),
        }
    });
    if let Some(store) = mem.store_c {
        let lanes: Vec<_> = (0..mem.tile.warpgroups)
            .map(|w| lane(e, mem.tile, e.index(w * wgmma::THREADS), bm, bn))
            .collect();
        store.emulated_store(e, kn, shared, &lanes);
    }
}
