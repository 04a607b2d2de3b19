//! The generic GPU kernel of `lowp-to-nvvm` and `lowp-to-rocdl`, for the formats and layouts
//! no matrix instruction takes: one output element per thread in blocks of 32 x 8 threads
//! (columns on x, so that stores of C coalesce), codes decoded by bit arithmetic and
//! accumulated in f32 per K segment: the body of `lowp-to-parallel-loops`, inside a block
//! loop and a guarded thread loop.

use melior::dialect::arith::CmpiPredicate;
use melior::ir::OperationRef;

use crate::expand_quantize::ceil_div;
use crate::ir::Emitter;
use crate::to_parallel_loops::Element;
use crate::PassError;

/// Threads per block along columns (x) and rows (y).
const BLOCK: (i64, i64) = (32, 8);

/// Lower `op` to the generic kernel's block and thread loops.
pub(crate) fn lower<'c, 'a>(
    e: &Emitter<'c, 'a>,
    op: OperationRef<'c, 'a>,
) -> Result<(), PassError> {
    let el = Element::prepare(e, op)?;
    let (zero, one) = (e.index(0), e.index(1));
    let (bx, by) = (e.index(BLOCK.0), e.index(BLOCK.1));
    let grid = [ceil_div(e, el.ops.n, bx), ceil_div(e, el.ops.m, by)];
    e.parallel_nest(&[zero, zero], &grid, &[one, one], |e, b| {
        e.parallel_nest(&[zero, zero], &[bx, by], &[one, one], |e, t| {
            let j = e.addi(e.muli(b[0], bx), t[0]);
            let i = e.addi(e.muli(b[1], by), t[1]);
            let inside = e.andi(
                e.cmpi(CmpiPredicate::Ult, i, el.ops.m),
                e.cmpi(CmpiPredicate::Ult, j, el.ops.n),
            );
            e.if_then(inside, |e| el.emit(e, i, j));
        });
    });
    Ok(())
}
