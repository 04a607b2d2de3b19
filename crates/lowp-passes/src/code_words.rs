//! Codes translated to FP8 images four at a time in a 32-bit word, where the embedding's
//! table allows, instead of one select chain per code: 4-bit codes (FP4, 4-bit customs)
//! with three byte permutes over the 16 images (`translate4`), 5- and 6-bit codes stored
//! one per byte (FP6) by word arithmetic that reproduces the table (`ByteRule`,
//! `translate_bytes`). The byte permute is PTX `prmt.b32` on NVIDIA GPUs, `v_perm_b32` on
//! AMD ones, and the same by shifts in the CPU emulations (`Permute`). Shared by the wgmma
//! pipeline's translated tiles and the register kernels' fragment loads (`matrix_kernel`,
//! NVIDIA's mma.sync and AMD's MFMA).

use melior::dialect::arith::CmpiPredicate;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Identifier, Value};

use crate::ir::Emitter;
use crate::matrix_kernel::Table;

/// How a kernel permutes bytes. Its selectors have the instruction's form: 4-bit nibbles
/// (PTX `prmt.b32`: low 16 bits, nibble i for byte i) or bytes (AMD `v_perm_b32`: byte i
/// for byte i); `selectors_of_nibbles` / `selectors_of_bytes` make them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Permute {
    /// `nvvm.prmt` (PTX `prmt.b32`).
    Prmt,
    /// `prmt.b32` by shifts and selects (the NVIDIA kernels' CPU emulations).
    Shifts,
    /// `llvm.amdgcn.perm` (`v_perm_b32`, gfx9 and later).
    Perm,
    /// `v_perm_b32` by shifts and selects (the AMD kernels' CPU emulations).
    PermShifts,
}

impl Permute {
    /// An NVIDIA kernel's: `prmt` on the GPU, shifts in its CPU emulation.
    pub(crate) fn nvidia(emulate: bool) -> Self {
        if emulate {
            Permute::Shifts
        } else {
            Permute::Prmt
        }
    }

    /// An AMD kernel's: `v_perm_b32` on the GPU, shifts in its CPU emulation.
    pub(crate) fn amd(emulate: bool) -> Self {
        if emulate {
            Permute::PermShifts
        } else {
            Permute::Perm
        }
    }

    /// `v >> n` (an `i32`, `n` in 1..32): with `prmt`, `mul.hi.u32 v, 2^(32 - n)`, which
    /// ptxas keeps as an `IMAD.HI` on the FMA pipe, beside the translations' permutes,
    /// masks and shifts that all issue to the integer pipe (16 lanes an SMSP on sm_90: a
    /// warp's instruction holds it 2 clocks).
    pub(crate) fn shift_down<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        v: Value<'c, 'a>,
        n: u32,
    ) -> Value<'c, 'a> {
        debug_assert!((1..32).contains(&n));
        match self {
            Permute::Prmt => e.call_intrinsic(
                "llvm.nvvm.mulhi.ui",
                &[v, e.i32(1 << (32 - n))],
                e.int_type(32),
            ),
            _ => e.shrui(v, e.i32(n)),
        }
    }

    /// `word` (an `i32` constant a kernel permutes from: a table's word) where ptxas holds it
    /// in a register. A constant that is warp-uniform stays in a uniform register, and
    /// `prmt` takes its first operand from a vector register only: ptxas copies it into one
    /// before each permute (`IMAD.U32 R, RZ, RZ, UR`; 34 of the 426 instructions a stage of
    /// the f16 route's producer). With `prmt`, `word` is or-ed with `(%dynamic_smem_size >>
    /// 24) * %laneid` (inline assembly without side effects, which LLVM may hoist out of a
    /// loop; where it stays, it costs a few instructions a stage): zero, as shared memory
    /// is below 16 MiB, but not known to ptxas, and not uniform. Elsewhere `word` as it is.
    pub(crate) fn held<'c, 'a>(self, e: &Emitter<'c, 'a>, word: Value<'c, 'a>) -> Value<'c, 'a> {
        if self != Permute::Prmt {
            return word;
        }
        let text = "{ .reg .u32 t, l; mov.u32 t, %dynamic_smem_size; shr.u32 t, t, 24; \
                    mov.u32 l, %laneid; mul.lo.u32 t, t, l; or.b32 $0, $1, t; }";
        e.inline_asm(text, &[word], "=r,r", e.int_type(32), false)
    }

    /// Whether selectors are nibbles (`prmt`), not bytes (`v_perm`).
    pub(crate) fn nibbles(self) -> bool {
        matches!(self, Permute::Prmt | Permute::Shifts)
    }

    /// Selectors from four 4-bit indices in the low 16 bits of `packed` (index i in nibble
    /// i): as they are for `prmt`; spread one per byte for `v_perm`: the low nibbles of
    /// bytes 0 and 1 (indices 0 and 2) and their high ones (1 and 3) interleaved by one
    /// permute (selector 0x05010400).
    pub(crate) fn selectors_of_nibbles<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        packed: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        if self.nibbles() {
            return packed;
        }
        let low = e.andi(packed, e.i32(0x0F0F));
        let high = e.andi(e.shrui(packed, e.i32(4)), e.i32(0x0F0F));
        self.perm(e, high, low, e.i32(0x0501_0400))
    }

    /// Selectors from four indices below 16, one per byte of `bytes` (index i in byte i):
    /// as they are for `v_perm`; gathered into the low 16 bits for `prmt` (each byte or'ed
    /// with the next one's nibble, then bytes 0 and 2 picked).
    pub(crate) fn selectors_of_bytes<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        bytes: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        if !self.nibbles() {
            return bytes;
        }
        let pairs = e.ori(bytes, e.shrui(bytes, e.i32(4)));
        self.prmt(e, pairs, e.i32(0), e.i32(0x20))
    }

    /// Byte i of the result: byte `n` of the 8 bytes of `lo` (0-3) and `hi` (4-7), `n`
    /// (0-7) selector i.
    pub(crate) fn lookup<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        lo: Value<'c, 'a>,
        hi: Value<'c, 'a>,
        selectors: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        if self.nibbles() {
            self.prmt(e, lo, hi, selectors)
        } else {
            self.perm(e, hi, lo, selectors)
        }
    }

    /// Byte i of the result: `lookup`'s by the low nibble of byte i of `bytes` (nibble
    /// form; bits 4-7 of each byte not read): a half word's nibbles 0 and 2 are its two
    /// bytes' low nibbles, so a lookup over `bytes` and one over its high half give bytes
    /// 0-1 and 2-3 in bytes 0 and 2 of each, and a third permute (0x6420) puts them in
    /// order. No nibbles gathered (a shift, masks, a permute).
    pub(crate) fn lookup_bytes<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        lo: Value<'c, 'a>,
        hi: Value<'c, 'a>,
        bytes: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        debug_assert!(self.nibbles());
        let first = self.lookup(e, lo, hi, bytes);
        let second = self.lookup(e, lo, hi, self.shift_down(e, bytes, 16));
        self.prmt(e, first, second, e.i32(0x6420))
    }

    /// 0xFF in each byte of `word` whose bit 7 is set, else 0: `prmt`'s sign mode on bytes
    /// 0-3 (selector 0xBA98); `v_perm`'s (signs of bytes 1, 3, 5, 7 only) on `word` above
    /// `word << 8`, whose bytes 1 and 3 hold `word`'s bytes 0 and 2.
    pub(crate) fn signs<'c, 'a>(self, e: &Emitter<'c, 'a>, word: Value<'c, 'a>) -> Value<'c, 'a> {
        if self.nibbles() {
            self.prmt(e, word, e.i32(0), e.i32(0xBA98))
        } else {
            let below = e.shli(word, e.i32(8));
            self.perm(e, word, below, e.i32(0x0B09_0A08))
        }
    }

    /// 0xFF in byte i of the result where selector i (below 16, in this permute's form) has
    /// bit 3, else 0: `signs` of the selectors moved up 4 bits, where bit 3 of selector i
    /// becomes bit 7 of byte i (`v_perm`'s form); `prmt`'s holds the selectors as nibbles,
    /// so bit 3 of selectors 0 and 2 is bit 7 of bytes 0 and 1 of `selectors << 4`, that of
    /// 1 and 3 bit 7 of bytes 0 and 1 of `selectors`: one `prmt` in sign mode over both
    /// (selector 0xD9C8).
    pub(crate) fn code_signs<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        selectors: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        let up = e.shli(selectors, e.i32(4));
        if self.nibbles() {
            self.prmt(e, up, selectors, e.i32(0xD9C8))
        } else {
            self.signs(e, up)
        }
    }

    /// Bytes `half * 2` and `half * 2 + 1` of `word` as the high bytes of the two halves of
    /// a word, the low bytes zero (`prmt` 0x1404 / 0x3424 over the word and 0): E5M2 codes
    /// become the f16 values they are (an f16's high byte is an E5M2 code of the same
    /// value; E5M2 is f16 with 8 mantissa bits fewer).
    pub(crate) fn widen_pair<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        word: Value<'c, 'a>,
        half: u32,
    ) -> Value<'c, 'a> {
        let selector = if half == 0 { 0x1404 } else { 0x3424 };
        self.prmt(e, word, e.i32(0), e.i32(selector))
    }

    /// PTX `prmt.b32` (default mode): byte i of the result is byte `n & 7` of the 8 bytes of
    /// `lo` (0-3) and `hi` (4-7), `n` nibble i of `selector`, replaced by its sign (0x00 /
    /// 0xFF) when `n & 8`.
    fn prmt<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        lo: Value<'c, 'a>,
        hi: Value<'c, 'a>,
        selector: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        debug_assert!(self.nibbles());
        if self == Permute::Prmt {
            return e.val(
                OperationBuilder::new("nvvm.prmt", e.loc())
                    .add_operands(&[lo, hi, selector])
                    .add_attributes(&[(
                        Identifier::new(e.ctx(), "mode"),
                        Attribute::parse(e.ctx(), "#nvvm.permute_mode<default>")
                            .expect("valid permute mode"),
                    )])
                    .add_results(&[e.int_type(32)])
                    .build()
                    .expect("valid nvvm.prmt"),
            );
        }
        let pool = pool(e, lo, hi);
        (0..4).fold(e.i32(0), |acc, i| {
            let n = e.andi(e.shrui(selector, e.i32(4 * i)), e.i32(0xF));
            let byte = byte_of(e, pool, e.andi(n, e.i32(7)));
            let negative = e.cmpi(CmpiPredicate::Ne, e.andi(byte, e.i32(0x80)), e.i32(0));
            let sign = e.select(negative, e.i32(0xFF), e.i32(0));
            let replicate = e.cmpi(CmpiPredicate::Ne, e.andi(n, e.i32(8)), e.i32(0));
            let byte = e.select(replicate, sign, byte);
            e.ori(acc, e.shli(byte, e.i32(8 * i)))
        })
    }

    /// AMD `v_perm_b32 d, s0, s1, selector`: byte i of the result by byte `n` of
    /// `selector` over the 8 bytes of `s1` (0-3) and `s0` (4-7): byte `n` for `n` < 8; the
    /// sign (0x00 / 0xFF) of byte 1, 3, 5, 7 for 8, 9, 10, 11; 0x00 for 12; 0xFF above (as
    /// LLVM folds `llvm.amdgcn.perm`).
    fn perm<'c, 'a>(
        self,
        e: &Emitter<'c, 'a>,
        s0: Value<'c, 'a>,
        s1: Value<'c, 'a>,
        selector: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        debug_assert!(!self.nibbles());
        let i32t = e.int_type(32);
        if self == Permute::Perm {
            return e.call_intrinsic("llvm.amdgcn.perm", &[s0, s1, selector], i32t);
        }
        let pool = pool(e, s1, s0);
        (0..4).fold(e.i32(0), |acc, i| {
            let n = e.andi(e.shrui(selector, e.i32(8 * i)), e.i32(0xFF));
            let below = |v: u32| e.cmpi(CmpiPredicate::Ult, n, e.i32(v));
            // The sign of byte 2 (n - 8) + 1.
            let signed = byte_of(
                e,
                pool,
                e.addi(e.muli(e.subi(n, e.i32(8)), e.i32(2)), e.i32(1)),
            );
            let negative = e.cmpi(CmpiPredicate::Ne, e.andi(signed, e.i32(0x80)), e.i32(0));
            let byte = e.select(
                below(8),
                byte_of(e, pool, e.andi(n, e.i32(7))),
                e.select(
                    below(12),
                    e.select(negative, e.i32(0xFF), e.i32(0)),
                    e.select(below(13), e.i32(0), e.i32(0xFF)),
                ),
            );
            e.ori(acc, e.shli(byte, e.i32(8 * i)))
        })
    }
}

/// The 8 bytes of `lo` (0-3) and `hi` (4-7) as an `i64`.
fn pool<'c, 'a>(e: &Emitter<'c, 'a>, lo: Value<'c, 'a>, hi: Value<'c, 'a>) -> Value<'c, 'a> {
    let i64t = e.int_type(64);
    e.ori(e.extui(lo, i64t), e.shli(e.extui(hi, i64t), e.int(64, 32)))
}

/// Byte `n` (an `i32`; its low 3 bits) of `pool` (`pool`), as an `i32`.
fn byte_of<'c, 'a>(e: &Emitter<'c, 'a>, pool: Value<'c, 'a>, n: Value<'c, 'a>) -> Value<'c, 'a> {
    let (i64t, i32t) = (e.int_type(64), e.int_type(32));
    let at = e.extui(e.muli(e.andi(n, e.i32(7)), e.i32(8)), i64t);
    e.trunci(e.andi(e.shrui(pool, at), e.int(64, 0xFF)), i32t)
}

/// A table of 4-bit codes (16 images) as four little-endian words, 4 images each.
pub(crate) fn nibble_table(table: &Table) -> Option<[u32; 4]> {
    match table {
        Table::Words(w) if w.len() == 2 => Some([
            w[0] as u32,
            (w[0] >> 32) as u32,
            w[1] as u32,
            (w[1] >> 32) as u32,
        ]),
        _ => None,
    }
}

/// Whether a 4-bit table (`nibble_table`'s words) is symmetric in the sign: codes 8-15 are
/// codes 0-7 with the sign, and theirs have none (E2M1 into E4M3 or E5M2; not into FNUZ,
/// which has no -0).
pub(crate) fn symmetric(table: &[u32; 4]) -> bool {
    let byte = |i: usize| (table[i / 4] >> (8 * (i % 4))) as u8;
    (0..8).all(|i| byte(i) & 0x80 == 0 && byte(i + 8) == byte(i) | 0x80)
}

/// The images of four 4-bit codes given as `p`'s selectors (`Permute::selectors_of_nibbles`
/// / `selectors_of_bytes`) as one word, image i in byte i. A `symmetric` table: the images
/// of the low 3 bits (one byte permute) with each code's bit 3 as the sign (a second, in
/// sign mode, `Permute::code_signs`). Else the images of codes 0-7 and of codes 8-15
/// picked by the low 3 bits (two byte permutes), then byte i from the second set where
/// code i has bit 3 (a third permute with selector `i + 4 * bit3`).
pub(crate) fn translate4<'c, 'a>(
    e: &Emitter<'c, 'a>,
    p: Permute,
    table: &[Value<'c, 'a>; 4],
    symmetric: bool,
    selectors: Value<'c, 'a>,
) -> Value<'c, 'a> {
    // Each selector's low 3 bits, its bit 3 moved to bit 2, and the identity, per nibble or
    // per byte.
    let (low, bit3, identity) = if p.nibbles() {
        (0x7777, 0x4444, 0x3210)
    } else {
        (0x0707_0707, 0x0404_0404, 0x0302_0100)
    };
    let low = e.andi(selectors, e.i32(low));
    let first = p.lookup(e, table[0], table[1], low);
    if symmetric {
        let signs = e.andi(p.code_signs(e, selectors), e.i32(0x8080_8080));
        return e.ori(first, signs);
    }
    let second = p.lookup(e, table[2], table[3], low);
    let pick = e.ori(
        e.andi(e.shrui(selectors, e.i32(1)), e.i32(bit3)),
        e.i32(identity),
    );
    p.lookup(e, first, second, pick)
}

/// The images of the eight 4-bit codes packed in `word` (code i in nibble i) through a
/// `symmetric` table, by `prmt` (`p` in nibble form): codes 0-3 and 4-7, image i in byte
/// i of each. `translate4`'s symmetric path for a whole word, sharing its work: one mask
/// of the low 3 bits (the high half's selectors that, shifted down: `shift_down`), and
/// `word << 4` for both halves' signs (bit 3 of codes 4 and 6 is bit 7 of its bytes 2 and
/// 3, of 5 and 7 of `word`'s: selector 0xFBEA).
pub(crate) fn translate8<'c, 'a>(
    e: &Emitter<'c, 'a>,
    p: Permute,
    table: &[Value<'c, 'a>; 4],
    word: Value<'c, 'a>,
) -> [Value<'c, 'a>; 2] {
    debug_assert!(p.nibbles());
    let low = e.andi(word, e.i32(0x7777_7777));
    let up = e.shli(word, e.i32(4));
    let half = |selectors: Value<'c, 'a>, signs: u32| {
        let signs = e.andi(p.prmt(e, up, word, e.i32(signs)), e.i32(0x8080_8080));
        e.ori(p.lookup(e, table[0], table[1], selectors), signs)
    };
    [half(low, 0xD9C8), half(p.shift_down(e, low, 16), 0xFBEA)]
}

/// A table of 5- or 6-bit codes (one per byte, the top bit the sign) that word arithmetic
/// applies to four codes at once (`translate_bytes`) instead of a select chain per code:
/// the sign moved to bit 7; a normal code's magnitude shifted left by `shift` (the wider
/// mantissa) plus `offset` (the exponent field's other bias); a subnormal one's image (its
/// exponent field 0) picked by its `mant` mantissa bits from `sub` (a byte permute over
/// the images of the `2^mant` subnormal magnitudes). FP6 into E4M3: E2M3 shift 0, offset
/// 0x30; E3M2 shift 1, offset 0x20. Where the rule allows (`ByteRule::corrected`), a
/// nibble permute (`prmt`) takes the shorter form of `corrections`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ByteRule {
    pub(crate) bits: u32,
    pub(crate) mant: u32,
    pub(crate) shift: u32,
    pub(crate) offset: u32,
    pub(crate) sub: [u32; 2],
    /// What a code's shifted bits plus `offset` exceed its image by, indexed by its low 3
    /// bits where none of its magnitude's bits above them is set (`ByteRule::corrections`),
    /// where that gives every code its image.
    pub(crate) corrections: Option<[u32; 2]>,
}

impl ByteRule {
    /// The rule with its `corrections`, where they give every code its image.
    fn new(bits: u32, mant: u32, shift: u32, offset: u32, sub: [u32; 2]) -> Self {
        let rule = ByteRule {
            bits,
            mant,
            shift,
            offset,
            sub,
            corrections: None,
        };
        ByteRule {
            corrections: rule.corrections(),
            ..rule
        }
    }

    /// The rule moved to `offset` with the subnormal images `sub` (`Moves`), its
    /// corrections recomputed.
    pub(crate) fn moved(&self, offset: u32, sub: [u32; 2]) -> Self {
        ByteRule::new(self.bits, self.mant, self.shift, offset, sub)
    }

    /// The image of `code`: what `translate_bytes` computes in its byte.
    pub(crate) fn image(&self, code: u32) -> u32 {
        let half = 1 << (self.bits - 1);
        let magnitude = code & (half - 1);
        let sign = (code & half) << (8 - self.bits);
        let body = if magnitude >> self.mant != 0 {
            (magnitude << self.shift) + self.offset
        } else {
            (self.sub[(magnitude / 4) as usize] >> (8 * (magnitude % 4))) & 0xFF
        };
        body | sign
    }

    /// Whether `translate_bytes` takes the corrections' form with permute `p`: nibble
    /// selectors (`prmt`, whose sign mode gives the 0 of codes that need none).
    pub(crate) fn corrected(&self, p: Permute) -> bool {
        p.nibbles() && self.corrections.is_some()
    }

    /// The two words `translate_bytes` looks up with `p`: the corrections
    /// (`ByteRule::corrected`) or the subnormal images.
    pub(crate) fn words(&self, p: Permute) -> [u32; 2] {
        match self.corrections {
            Some(c) if self.corrected(p) => c,
            _ => self.sub,
        }
    }

    /// What multiplies a code's sign bit (`code & half`, in place) to move its shifted
    /// value to bit 7: `(0x80 - (half << shift)) / half` (0 for a 6-bit code shifted 2).
    fn sign_factor(&self) -> i64 {
        let half = 1i64 << (self.bits - 1);
        (0x80 - (half << self.shift)) / half
    }

    /// Whether a magnitude bit above the low 3 of `code` is set (bits 3-4 of a 6-bit code,
    /// bit 3 of a 5-bit one): an exponent bit (a mantissa is at most 3 bits wide), so the
    /// code is normal and takes no correction. Normal codes whose exponent bits are all
    /// below bit 3 index corrections of 0.
    fn high(&self, code: u32) -> bool {
        let half = 1u32 << (self.bits - 1);
        code & (half - 1) & !7 != 0
    }

    /// The corrections' form of the rule: per byte, `(code << shift) + offset - c +
    /// (code & half) * sign_factor`, with `c` byte `code & 7` of the corrections where no
    /// magnitude bit above the low 3 is set (`high`), else 0 (`prmt`'s sign mode over a
    /// byte whose bit 7 is clear). `None` where some correction is not within 0..=0x7F or
    /// some code's sum is not its image: every code is checked, and the sum holds in the
    /// word (each byte's sum is its image, so whatever carries and borrows pass between
    /// the terms, the word's total is the four images side by side).
    fn corrections(&self) -> Option<[u32; 2]> {
        let half = 1u32 << (self.bits - 1);
        let mut words = [0u32; 2];
        for low in 0..8u32 {
            let excess = i64::from((low << self.shift) + self.offset) - i64::from(self.image(low));
            let c = u32::try_from(excess).ok().filter(|&c| c < 0x80)?;
            words[(low / 4) as usize] |= c << (8 * (low % 4));
        }
        let sum = |code: u32| {
            let low = code & 7;
            let c = if self.high(code) {
                0
            } else {
                (words[(low / 4) as usize] >> (8 * (low % 4))) & 0xFF
            };
            i64::from(code << self.shift) + i64::from(self.offset) - i64::from(c)
                + self.sign_factor() * i64::from(code & half)
        };
        (0..2 * half)
            .all(|code| sum(code) == i64::from(self.image(code)))
            .then_some(words)
    }
}

/// The byte rule that gives `table`'s image for every code, where one does: each mantissa
/// width (0-3 bits) and shift (0-3) is tried, the offset taken from the first normal code,
/// and the rule checked on all codes (so no format's fields are trusted, only the table).
pub(crate) fn byte_rule(table: &Table) -> Option<ByteRule> {
    let Table::Words(words) = table else {
        return None;
    };
    let bits = match words.len() {
        4 => 5,
        8 => 6,
        _ => return None,
    };
    let image = |c: u32| (words[(c / 8) as usize] >> (8 * (c % 8))) as u32 & 0xFF;
    let half = 1u32 << (bits - 1);
    let rules = (0..=3).flat_map(|mant| (0..=3).map(move |shift| (mant, shift)));
    rules.into_iter().find_map(|(mant, shift)| {
        let first = 1u32 << mant;
        // No carry between bytes: every shifted magnitude plus the offset stays in its byte.
        let offset = image(first).checked_sub(first << shift)?;
        if first >= half || ((half - 1) << shift) + offset > 0xFF {
            return None;
        }
        let mut sub = [0u32; 2];
        for m in 0..first {
            sub[(m / 4) as usize] |= image(m) << (8 * (m % 4));
        }
        let rule = ByteRule::new(bits, mant, shift, offset, sub);
        (0..2 * half)
            .all(|c| rule.image(c) == image(c))
            .then_some(rule)
    })
}

/// `byte` in each of a word's four bytes.
pub(crate) fn splat<'c, 'a>(e: &Emitter<'c, 'a>, byte: u32) -> Value<'c, 'a> {
    e.i32(byte * 0x0101_0101)
}

/// The images of the four codes in `word` (one per byte) by `rule`, image i in byte i, with
/// the rule's offset (in every byte) and its two words for `p` (`ByteRule::words`) given as
/// values: `rule`'s own, or (folded scales) those of its table moved down (`Moves`).
/// Corrected (`ByteRule::corrected`, `prmt`): the shifted codes plus the offsets, less each
/// code's correction (`Permute::lookup_bytes` by its low 3 bits and, in bit 3, whether a
/// magnitude bit above them is set), plus the signs times `sign_factor`; bits above a
/// code's are ignored, as by `decode`. Else the normal images and the subnormal ones (a
/// permute over their mantissa bits), each code's picked by whether its exponent field is
/// 0 (a third permute, in sign mode), then the sign. E2M3 into E4M3 in ptxas 12.9's SASS,
/// per 4 codes: corrected 10 instructions, 7 on the integer pipe (LOP3 x 3, PRMT x 3,
/// IADD3; the two shifts down and the signs' multiply-add are `IMAD`s), else 13: 9 on the
/// integer pipe and a VIADD.
pub(crate) fn translate_bytes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    p: Permute,
    rule: &ByteRule,
    (offsets, words): (Value<'c, 'a>, [Value<'c, 'a>; 2]),
    word: Value<'c, 'a>,
) -> Value<'c, 'a> {
    let half = 1u32 << (rule.bits - 1);
    if rule.corrected(p) {
        // Bit 3 of each byte: whether a magnitude bit above the low 3 is set (bit 4 of a
        // 6-bit code moved down one, or'ed in); bits 4-7 are not read.
        let flagged = if rule.bits == 6 {
            e.ori(word, e.andi(p.shift_down(e, word, 1), splat(e, 0x08)))
        } else {
            word
        };
        let corrections = p.lookup_bytes(e, words[0], words[1], flagged);
        let codes = e.andi(word, splat(e, 2 * half - 1));
        let shifted = match rule.shift {
            0 => codes,
            s => e.shli(codes, e.i32(s)),
        };
        let body = e.subi(e.addi(shifted, offsets), corrections);
        return match rule.sign_factor() {
            0 => body,
            f => {
                let signs = e.andi(word, splat(e, half));
                e.addi(body, e.muli(signs, e.i32(f as i32 as u32)))
            }
        };
    }
    let low = (1u32 << rule.mant) - 1;
    let magnitude = e.andi(word, splat(e, half - 1));
    let normal = e.addi(e.shli(magnitude, e.i32(rule.shift)), offsets);
    // Subnormal images: the mantissa bits as selectors.
    let m = e.andi(word, splat(e, low));
    let sub = p.lookup(e, words[0], words[1], p.selectors_of_bytes(e, m));
    // 0xFF in the bytes of normal codes: bit 7 of exponent bits + 0x80 - 2^mant is set
    // where the exponent field is not 0, and the permute's sign mode spreads it.
    let exponent = e.andi(word, splat(e, (half - 1) & !low));
    let flag = e.addi(exponent, splat(e, 0x80 - (1 << rule.mant)));
    let normals = p.signs(e, flag);
    let body = e.ori(
        e.andi(normal, normals),
        e.andi(sub, e.xori(normals, e.i32(u32::MAX))),
    );
    let sign = e.shli(e.andi(word, splat(e, half)), e.i32(8 - rule.bits));
    e.ori(body, sign)
}

/// The images of four 4-bit codes stored one per byte in `word` (image i from byte i;
/// bits 4-7 of each ignored), through `table` as in `translate4`. With `prmt` and a
/// `symmetric` table, the images of the bytes' low 3 bits (`Permute::lookup_bytes`), and
/// bit 3 of each byte moved up 4 as its sign. Else the bytes' nibbles gathered into
/// `translate4`'s selectors.
pub(crate) fn translate4_bytes<'c, 'a>(
    e: &Emitter<'c, 'a>,
    p: Permute,
    table: &[Value<'c, 'a>; 4],
    symmetric: bool,
    word: Value<'c, 'a>,
) -> Value<'c, 'a> {
    if symmetric && p.nibbles() {
        let low = e.andi(word, splat(e, 0x07));
        let magnitudes = p.lookup_bytes(e, table[0], table[1], low);
        let signs = e.andi(e.shli(word, e.i32(4)), splat(e, 0x80));
        return e.ori(magnitudes, signs);
    }
    let selectors = p.selectors_of_bytes(e, e.andi(word, splat(e, 0x0F)));
    translate4(e, p, table, symmetric, selectors)
}

/// A table's word-at-a-time translation, where it has one.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WordRule {
    /// 4-bit codes: the table's four words for `translate4`.
    Nibbles([u32; 4]),
    /// 5- and 6-bit codes one per byte.
    Bytes(ByteRule),
}

impl WordRule {
    /// The rule for `table`'s codes stored `packed` (two per byte) or one per byte.
    pub(crate) fn of(table: &Table, packed: bool) -> Option<Self> {
        nibble_table(table)
            .map(WordRule::Nibbles)
            .or_else(|| byte_rule(table).filter(|_| !packed).map(WordRule::Bytes))
    }

    /// The images of four codes, image i in byte i: `stored` holds them as stored, packed
    /// nibbles in its low 16 bits (first code lowest) or one code per byte.
    pub(crate) fn apply<'c, 'a>(
        &self,
        e: &Emitter<'c, 'a>,
        p: Permute,
        packed: bool,
        stored: Value<'c, 'a>,
    ) -> Value<'c, 'a> {
        match self {
            WordRule::Nibbles(t) => {
                let table = t.map(|w| e.i32(w));
                if packed {
                    let selectors = p.selectors_of_nibbles(e, stored);
                    translate4(e, p, &table, symmetric(t), selectors)
                } else {
                    translate4_bytes(e, p, &table, symmetric(t), stored)
                }
            }
            WordRule::Bytes(rule) => translate_bytes(
                e,
                p,
                rule,
                (splat(e, rule.offset), rule.words(p).map(|w| e.i32(w))),
                stored,
            ),
        }
    }
}
