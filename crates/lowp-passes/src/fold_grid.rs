//! `lowp-fold-grid`: keep each `gpu.launch` grid within CUDA's limits (`limit`, 65535 blocks
//! along y and along z) by folding a y that may exceed it into z. The launch gets
//! `y' = ceil(y / z')` rows of blocks (a multiple of the cluster's rows) in `z' = ceil(y /
//! limit)` layers; the body recomposes the block row `z * y' + y` and runs only for rows
//! below the old `y` (whole clusters skip together). Uses of the block id, grid size and
//! cluster id and cluster count along y and z in the body (not in a launch nested in it)
//! read the old values, so the kernel computes what it computed before.
//!
//! The kernels lowp-to-nvvm and lowp-to-rocdl make put the tiles of C's rows on y: without
//! this, 32-row tiles stop at 2,097,120 rows, 64-row ones at 4,194,240 and 128-row ones at
//! 8,388,480.
//!
//! Before (`limit = 4`):
//! ```mlir
//! gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c6, %gz = %c1) ... {
//!   "use"(%by) : (index) -> ()
//!   gpu.terminator
//! }
//! ```
//! After:
//! ```mlir
//! gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c3, %gz = %c2) ... {
//!   %0 = arith.muli %bz, %gy : index
//!   %row = arith.addi %0, %by : index
//!   %in = arith.cmpi ult, %row, %c6 : index
//!   scf.if %in {
//!     "use"(%row) : (index) -> ()
//!   }
//!   gpu.terminator
//! }
//! ```
//! A launch whose y is a constant within the limit is left as it is. A constant y the
//! fold cannot bring within the limit (more than `limit`^2 rows of blocks), or one beyond
//! the limit in a launch the fold cannot take (z not the constant 1, a cluster size along
//! y that is not a constant or is above the limit, a body of several blocks,
//! `gpu.global_id` along y or z) is an error at the launch; such a launch whose y is
//! computed at run time is left as it is (the runtime refuses a grid beyond the limits
//! before it launches). A constant negative size along any dimension is an error at the
//! launch. Runs on any op, before `gpu-kernel-outlining`.

use melior::dialect::arith::CmpiPredicate;
use melior::dialect::DialectHandle;
use melior::ir::operation::{OperationBuilder, OperationLike, WalkOrder, WalkResult};
use melior::ir::{BlockLike, BlockRef, OperationRef, RegionLike, Value, ValueLike};

use crate::expand_quantize::unsupported;
use crate::ir::{dense_i32s, enclosing, static_index, Emitter};
use crate::registry::{OptionDef, OptionKind, PassDef, PassOptions};
use crate::PassError;

/// The pass definition.
pub const PASS: PassDef = PassDef {
    argument: "lowp-fold-grid",
    name: "LowpFoldGrid",
    description: "Fold the rows of a gpu.launch grid beyond the limit (CUDA's 65535) into \
                  z; the body recomposes its block row and skips the rows past the old grid",
    op_name: None,
    options: &[OptionDef {
        name: "limit",
        default: "65535",
        description: "The most blocks a grid may have along y and along z",
        kind: OptionKind::UInt { min: 1, max: 65535 },
    }],
    dependent_dialects: || {
        vec![
            DialectHandle::gpu(),
            DialectHandle::arith(),
            DialectHandle::scf(),
        ]
    },
    run,
};

/// The folded grid `(y', z')` for `y` rows of blocks in clusters of `cluster` rows, at most
/// `limit` along each: `y' * z' >= y`, `y'` a multiple of `cluster`, the fewest layers `z'`.
/// `None` when no fold fits (`y` beyond `limit`^2 rows, or clusters taller than the limit).
pub fn fold(y: u64, cluster: u64, limit: u64) -> Option<(u64, u64)> {
    let rows = limit.checked_sub(limit % cluster.max(1))?;
    if rows == 0 || cluster == 0 {
        return None;
    }
    let z = y.div_ceil(rows).max(1);
    if z > limit {
        return None;
    }
    let per_layer = y.div_ceil(z).div_ceil(cluster) * cluster;
    Some((per_layer, z))
}

fn run<'c, 'a>(root: OperationRef<'c, 'a>, options: &PassOptions) -> Result<(), PassError> {
    let limit = options.uint("limit");
    let mut launches = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.launch") {
            launches.push(op.to_raw());
        }
        WalkResult::Advance
    });
    let ctx_ref = root.context();
    // SAFETY: the context outlives the pass run, and `ctx_ref` outlives `ctx`.
    let ctx = unsafe { ctx_ref.to_ref() };
    for raw in launches {
        // SAFETY: collected from the live IR above; the rewrite of one launch leaves the
        // others in place.
        let launch = unsafe { OperationRef::from_raw(raw) };
        fold_launch(ctx, launch, limit)?;
    }
    Ok(())
}

/// Why a launch cannot be folded, checked before anything changes.
fn obstacle(launch: OperationRef) -> Option<String> {
    if launch
        .region(0)
        .ok()?
        .first_block()?
        .next_in_region()
        .is_some()
    {
        return Some("its body has several blocks".into());
    }
    let mut found = None;
    launch.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.global_id")
            && dimension(op).is_some_and(|d| d != "x")
            && in_launch(op, launch)
        {
            found = Some("its body reads gpu.global_id along y or z".to_string());
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    found
}

/// Whether `launch` is the closest `gpu.launch` around `op` (not one nested in its body).
fn in_launch(op: OperationRef, launch: OperationRef) -> bool {
    enclosing(op, "gpu.launch").is_some_and(|l| l == launch)
}

/// The `dimension` of a gpu id op (`x`, `y`, `z`).
fn dimension(op: OperationRef) -> Option<&'static str> {
    let text = op.attribute("dimension").ok()?.to_string();
    ["x", "y", "z"]
        .into_iter()
        .find(|d| text.contains(&format!("dim {d}>")))
}

fn fold_launch<'c, 'a>(
    ctx: &'c melior::Context,
    launch: OperationRef<'c, 'a>,
    limit: u64,
) -> Result<(), PassError> {
    let segments = launch
        .attribute("operandSegmentSizes")
        .ok()
        .and_then(dense_i32s)
        .filter(|s| s.len() >= 10)
        .ok_or_else(|| unsupported(launch, "gpu.launch without its operand segments"))?;
    let at = segments[0] as usize;
    let operand = |i: usize| {
        launch
            .operand(at + i)
            .map_err(|_| unsupported(launch, "gpu.launch operand out of range"))
    };
    let (y, z) = (operand(1)?, operand(2)?);
    // A negative count is no grid: the launch would pass it on as an unsigned count far
    // past every limit (-1 as 4294967295).
    for (d, dim) in ["x", "y", "z"].into_iter().enumerate() {
        if let Some(v) = static_index(operand(d)?).filter(|v| *v < 0) {
            return Err(unsupported(
                launch,
                format!("a grid of {v} blocks along {dim}: a grid's sizes are not negative"),
            ));
        }
    }
    let static_y = static_index(y).map(|v| v as u64);
    if static_y.is_some_and(|v| v <= limit) {
        return Ok(());
    }
    // From here the grid may exceed the limit: fold it, or say why not where y is known.
    let refuse = |reason: String| match static_y {
        Some(v) => Err(unsupported(
            launch,
            format!(
                "a grid of {v} blocks along y is beyond the limit of {limit}, and it \
                 cannot be folded into z: {reason}"
            ),
        )),
        None => Ok(()),
    };
    if static_index(z) != Some(1) {
        return refuse("its z is not the constant 1".into());
    }
    let clustered = segments[7] == 1;
    let cluster_rows = if clustered {
        match static_index(operand(7)?) {
            Some(c) if c >= 1 => c as u64,
            _ => return refuse("its clusters' size along y is not a constant".into()),
        }
    } else {
        1
    };
    if cluster_rows > limit {
        return refuse(format!(
            "its clusters of {cluster_rows} rows are taller than the limit"
        ));
    }
    let region = launch
        .region(0)
        .map_err(|_| unsupported(launch, "gpu.launch without a body"))?;
    let body = region
        .first_block()
        .ok_or_else(|| unsupported(launch, "gpu.launch with an empty body"))?;
    if let Some(reason) = obstacle(launch) {
        return refuse(reason);
    }
    // The folded grid, before the launch.
    let host = Emitter::before(ctx, launch)
        .ok_or_else(|| unsupported(launch, "gpu.launch outside a block"))?;
    let (rows, layers) = match static_y {
        Some(v) => {
            let (rows, layers) = fold(v, cluster_rows, limit).ok_or_else(|| {
                let most = (limit - limit % cluster_rows) * limit;
                unsupported(
                    launch,
                    format!(
                        "a grid of {v} blocks along y is more than y and z hold at the \
                         limit of {limit} each ({most}): too many blocks for one launch"
                    ),
                )
            })?;
            (host.index(rows as i64), host.index(layers as i64))
        }
        None => {
            // As `fold` does, at run time.
            let per = limit - limit % cluster_rows;
            let layers = index_op(&host, "arith.ceildivui", y, host.index(per as i64));
            let layers = index_op(&host, "arith.maxui", layers, host.index(1));
            let rows = index_op(&host, "arith.ceildivui", y, layers);
            let rows = match cluster_rows {
                1 => rows,
                c => {
                    let c = host.index(c as i64);
                    host.muli(index_op(&host, "arith.ceildivui", rows, c), c)
                }
            };
            (rows, layers)
        }
    };
    // SAFETY: replacing two operands of the live launch with index values defined before it.
    unsafe {
        mlir_sys::mlirOperationSetOperand(launch.to_raw(), (at + 1) as isize, rows.to_raw());
        mlir_sys::mlirOperationSetOperand(launch.to_raw(), (at + 2) as isize, layers.to_raw());
    }
    // The old rows as a constant where known (sunk into the kernel, not a parameter).
    let old_rows = match static_y {
        Some(v) => host.index(v as i64),
        None => y,
    };
    recompose(ctx, launch, body, old_rows, rows, clustered, cluster_rows)
}

/// A binary arith op `name` on two index values.
fn index_op<'c, 'a>(
    e: &Emitter<'c, 'a>,
    name: &str,
    a: Value<'c, 'a>,
    b: Value<'c, 'a>,
) -> Value<'c, 'a> {
    e.val(
        OperationBuilder::new(name, e.loc())
            .add_operands(&[a, b])
            .add_results(&[e.index_type()])
            .build()
            .expect("valid binary arith op"),
    )
}

/// In the launch's `body`: the block row `z * y' + y`, every read of the old row, layer,
/// grid size, cluster id and cluster count along y and z replaced (without clusters, a
/// cluster is a block), and the body's ops moved under `scf.if row < rows` (`rows`: the
/// old grid's y). `y'` is `per_layer`, the value before the launch (a constant, or a kernel
/// argument once outlined), not the body's grid size: AMD kernels read that through a
/// ROCm device library call (`__ockl_get_num_groups`), which a code object cannot link
/// without ROCm installed.
fn recompose<'c, 'a>(
    ctx: &'c melior::Context,
    launch: OperationRef<'c, 'a>,
    body: BlockRef<'c, 'a>,
    rows: Value<'c, 'a>,
    per_layer: Value<'c, 'a>,
    clustered: bool,
    cluster_rows: u64,
) -> Result<(), PassError> {
    let arg = |i: usize| -> Result<Value<'c, 'a>, PassError> {
        body.argument(i)
            .map(Into::into)
            .map_err(|_| unsupported(launch, "gpu.launch body without its arguments"))
    };
    let (row_in_layer, layer, grid_rows, layers) = (arg(1)?, arg(2)?, arg(7)?, arg(8)?);
    let first = body
        .first_operation()
        .ok_or_else(|| unsupported(launch, "gpu.launch body without a terminator"))?;
    let e = Emitter::before(ctx, first).expect("an op in the body");
    let (zero, one) = (e.index(0), e.index(1));
    let above = e.muli(layer, per_layer);
    let row = e.addi(above, row_in_layer);
    let inside = e.cmpi(CmpiPredicate::Ult, row, rows);
    let (cluster_row, clusters) = match cluster_rows {
        1 => (row, rows),
        c => (
            e.divui(row, e.index(c as i64)),
            e.divui(rows, e.index(c as i64)),
        ),
    };
    let defining = |v: Value<'c, 'a>| {
        // SAFETY: `v` is the result of an op this function created.
        unsafe { mlir_sys::mlirOpResultGetOwner(v.to_raw()) }
    };
    let replace = |old: Value<'c, 'a>, new: Value<'c, 'a>, except: &[Value<'c, 'a>]| {
        let mut owners: Vec<_> = except.iter().map(|&v| defining(v)).collect();
        // SAFETY: live values of this body; the exceptions are ops created above.
        unsafe {
            mlir_sys::mlirValueReplaceAllUsesExcept(
                old.to_raw(),
                new.to_raw(),
                owners.len() as isize,
                owners.as_mut_ptr(),
            )
        }
    };
    replace(row_in_layer, row, &[row]);
    replace(layer, zero, &[above]);
    replace(grid_rows, rows, &[]);
    replace(layers, one, &[]);
    if clustered {
        replace(arg(13)?, cluster_row, &[]);
        replace(arg(14)?, zero, &[]);
        // The cluster-size arguments: gpu-kernel-outlining reads them as gpu.cluster_dim
        // (clusters in the grid), as the ops below are rewritten.
        replace(arg(16)?, clusters, &[]);
        replace(arg(17)?, one, &[]);
    }
    // The same reads through id ops in the body (lowp's kernels read the grid's size so).
    let mut reads = Vec::new();
    launch.walk(WalkOrder::PreOrder, |op| {
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        let new = match (name.as_str(), dimension(op)) {
            ("gpu.block_id", Some("y")) => Some(row),
            ("gpu.block_id" | "gpu.cluster_id", Some("z")) => Some(zero),
            ("gpu.grid_dim", Some("y")) => Some(rows),
            ("gpu.grid_dim" | "gpu.cluster_dim", Some("z")) => Some(one),
            ("gpu.cluster_id", Some("y")) => Some(cluster_row),
            ("gpu.cluster_dim", Some("y")) => Some(clusters),
            _ => None,
        };
        if let Some(new) = new.filter(|_| in_launch(op, launch)) {
            reads.push((op.to_raw(), new));
        }
        WalkResult::Advance
    });
    for &(op, new) in &reads {
        // SAFETY: an op of the body with one index result, replaced by a value that
        // dominates it (defined at the body's start, or before the launch); erased below,
        // once the body's ops have moved.
        unsafe {
            let op = OperationRef::from_raw(op);
            let result = op.result(0).expect("id op result");
            mlir_sys::mlirValueReplaceAllUsesOfWith(result.to_raw(), new.to_raw());
        }
    }
    // scf.if row < rows { the body's ops } before the terminator.
    let end = e.if_then(inside, |_| {});
    // SAFETY: moving the body's own ops (from the first one the pass did not make up to the
    // terminator) into the then block, in order, before its yield; then erasing the id
    // reads replaced above, which nothing uses.
    unsafe {
        let terminator = mlir_sys::mlirBlockGetTerminator(body.to_raw());
        let mut op = first.to_raw();
        while !op.ptr.is_null() && op.ptr != terminator.ptr {
            let next = mlir_sys::mlirOperationGetNextInBlock(op);
            mlir_sys::mlirOperationMoveBefore(op, end.to_raw());
            op = next;
        }
        for (op, _) in reads {
            mlir_sys::mlirOperationDestroy(op);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fold;

    #[test]
    fn the_fold_covers_every_row_within_the_limit() {
        for limit in [1u64, 2, 3, 4, 7, 64, 65535] {
            for cluster in [1u64, 2, 3, 4] {
                for y in (1..300u64).chain([65535, 65536, 131071, 4_000_000, 65535 * 65535]) {
                    let y = y * cluster;
                    match fold(y, cluster, limit) {
                        Some((rows, layers)) => {
                            assert!(rows <= limit && layers <= limit, "{y} {cluster} {limit}");
                            assert_eq!(rows % cluster, 0);
                            assert!(rows * layers >= y);
                            // The fewest layers: one fewer does not hold y.
                            let per = limit - limit % cluster;
                            assert!((layers - 1) * per < y || layers == 1);
                        }
                        None => assert!(
                            cluster > limit || y > (limit - limit % cluster) * limit,
                            "{y} {cluster} {limit}"
                        ),
                    }
                }
            }
        }
    }

    #[test]
    fn the_waste_is_less_than_a_layer_of_clusters() {
        let (rows, layers) = fold(70313, 1, 65535).unwrap();
        assert_eq!((rows, layers), (35157, 2));
        assert!(rows * layers - 70313 < layers);
    }
}
