//! `crc_extra` for every message of the MAVLink common dialect.
//!
//! The checksum of a frame can only be verified with its message's `crc_extra`. The decoder
//! verifies every common message, not just the ones the engine decodes, so garbage that happens
//! to look like a header is rejected instead of swallowing the real frames behind it.
//!
//! The lookup runs for every frame on the link, read or not, so it is a direct index: ids below
//! [`DIRECT_IDS`] (all but twelve of the dialect) through a 441-byte table and a 56-byte
//! bitmap of which exist, the twelve above it by bisection. Built at compile time from the
//! two sorted arrays below (which are not themselves linked in): 533 bytes of flash, less than
//! the two arrays the lookup bisected before (702 bytes) and no bisection on the hot path.
//! On 32-bit targets (the firmware, whose flash is budgeted) the 441-byte table is replaced
//! by the 222 extras that exist, in id order, indexed by the bitmap's rank (a 14-byte count
//! of the ids before each bitmap word, plus a population count): still no bisection, ~200
//! bytes less. A test checks both against the `mavlink` crate's own table.

/// Message ids of the common dialect, ascending.
const IDS: [u16; 234] = [
    0, 1, 2, 4, 5, 6, 7, 8, 11, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36,
    37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 54, 55, 61, 62, 63, 64, 65, 66, 67,
    69, 70, 73, 74, 75, 76, 77, 80, 81, 82, 83, 84, 85, 86, 87, 89, 90, 91, 92, 93, 100, 101, 102,
    103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121,
    122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140,
    141, 142, 143, 144, 146, 147, 148, 149, 162, 192, 225, 230, 231, 232, 233, 234, 235, 241, 242,
    243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 256, 257, 258, 259, 260, 261, 262,
    263, 264, 265, 266, 267, 268, 269, 270, 271, 275, 276, 277, 280, 281, 282, 283, 284, 285, 286,
    287, 288, 290, 291, 295, 296, 299, 300, 301, 310, 311, 320, 321, 322, 323, 324, 330, 331, 332,
    333, 334, 335, 336, 339, 340, 345, 350, 360, 361, 370, 371, 372, 373, 375, 376, 380, 385, 386,
    387, 388, 390, 395, 396, 397, 400, 401, 410, 411, 412, 413, 435, 436, 437, 440, 9000, 9005,
    12900, 12901, 12902, 12903, 12904, 12905, 12915, 12918, 12919, 12920,
];

/// `crc_extra` of the message at the same index in [`IDS`].
const EXTRAS: [u8; 234] = [
    50, 124, 137, 237, 217, 104, 119, 117, 89, 214, 159, 220, 168, 24, 23, 170, 144, 67, 115, 39,
    246, 185, 104, 237, 244, 222, 212, 9, 254, 230, 28, 28, 132, 221, 232, 11, 153, 41, 39, 78,
    196, 15, 3, 167, 183, 119, 191, 118, 148, 21, 243, 124, 38, 20, 158, 152, 143, 14, 106, 49, 22,
    143, 140, 5, 150, 231, 183, 63, 54, 47, 175, 102, 158, 208, 56, 93, 138, 108, 32, 185, 84, 34,
    174, 124, 237, 4, 76, 128, 56, 116, 134, 237, 203, 250, 87, 203, 220, 25, 226, 46, 29, 223, 85,
    6, 229, 203, 1, 195, 109, 168, 181, 47, 72, 131, 127, 103, 154, 178, 200, 189, 36, 208, 163,
    105, 151, 35, 150, 179, 90, 104, 85, 95, 130, 184, 81, 8, 204, 49, 170, 44, 83, 46, 71, 131,
    187, 92, 146, 179, 12, 133, 49, 26, 193, 35, 14, 109, 59, 22, 126, 18, 62, 70, 48, 123, 74, 99,
    137, 210, 1, 20, 251, 10, 234, 158, 19, 217, 243, 28, 95, 243, 88, 243, 78, 132, 23, 91, 236,
    231, 72, 225, 245, 199, 99, 209, 232, 11, 93, 75, 10, 26, 117, 251, 199, 232, 147, 132, 4, 8,
    156, 0, 50, 182, 110, 183, 160, 106, 33, 77, 134, 193, 30, 66, 113, 117, 114, 254, 140, 249,
    77, 49, 94, 139, 7, 20,
];

/// Ids below this are looked up by index: one past the largest id under 9000 (the dialect's
/// ids jump from 440 to 9000).
const DIRECT_IDS: usize = 441;

/// How many ids of [`IDS`] are at or above [`DIRECT_IDS`].
const HIGH_COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < IDS.len() {
        if IDS[i] as usize >= DIRECT_IDS {
            n += 1;
        }
        i += 1;
    }
    n
};

/// `crc_extra` by id for ids below [`DIRECT_IDS`] (0 where no message has the id).
#[cfg(any(target_pointer_width = "64", test))]
static DIRECT: [u8; DIRECT_IDS] = {
    let mut t = [0u8; DIRECT_IDS];
    let mut i = 0;
    while i < IDS.len() {
        if (IDS[i] as usize) < DIRECT_IDS {
            t[IDS[i] as usize] = EXTRAS[i];
        }
        i += 1;
    }
    t
};

/// Bit `id % 32` of word `id / 32`: whether message `id` (below [`DIRECT_IDS`]) exists.
static KNOWN: [u32; DIRECT_IDS.div_ceil(32)] = {
    let mut t = [0u32; DIRECT_IDS.div_ceil(32)];
    let mut i = 0;
    while i < IDS.len() {
        let id = IDS[i] as usize;
        if id < DIRECT_IDS {
            t[id / 32] |= 1 << (id % 32);
        }
        i += 1;
    }
    t
};

/// How many ids of [`IDS`] are below [`DIRECT_IDS`].
#[cfg(any(not(target_pointer_width = "64"), test))]
const LOW_COUNT: usize = IDS.len() - HIGH_COUNT;

/// The `crc_extra` of the ids below [`DIRECT_IDS`], ascending by id (the 32-bit lookup).
#[cfg(any(not(target_pointer_width = "64"), test))]
static DENSE: [u8; LOW_COUNT] = {
    let mut t = [0u8; LOW_COUNT];
    let mut i = 0;
    while i < LOW_COUNT {
        t[i] = EXTRAS[i];
        i += 1;
    }
    t
};

/// `RANK[w]`: how many ids below `32 * w` exist, i.e. the index in [`DENSE`] of the first id
/// of [`KNOWN`]'s word `w` (fits a byte: [`LOW_COUNT`] < 256).
#[cfg(any(not(target_pointer_width = "64"), test))]
static RANK: [u8; DIRECT_IDS.div_ceil(32)] = {
    assert!(LOW_COUNT < 256);
    let mut t = [0u8; DIRECT_IDS.div_ceil(32)];
    let mut w = 1;
    while w < t.len() {
        t[w] = t[w - 1] + KNOWN[w - 1].count_ones() as u8;
        w += 1;
    }
    t
};

/// The ids at or above [`DIRECT_IDS`], ascending, with their `crc_extra`.
static HIGH: [(u16, u8); HIGH_COUNT] = {
    let mut t = [(0u16, 0u8); HIGH_COUNT];
    let mut i = 0;
    let mut n = 0;
    while i < IDS.len() {
        if IDS[i] as usize >= DIRECT_IDS {
            t[n] = (IDS[i], EXTRAS[i]);
            n += 1;
        }
        i += 1;
    }
    t
};

/// The `crc_extra` of message `id`, or `None` for an id outside the common dialect.
pub fn crc_extra(id: u32) -> Option<u8> {
    let i = id as usize;
    if i < DIRECT_IDS {
        #[cfg(target_pointer_width = "64")]
        return direct(i);
        #[cfg(not(target_pointer_width = "64"))]
        return ranked(i);
    }
    let id = u16::try_from(id).ok()?;
    HIGH.binary_search_by_key(&id, |&(k, _)| k)
        .ok()
        .map(|i| HIGH[i].1)
}

/// The host's lookup of an id below [`DIRECT_IDS`]: one index into [`DIRECT`].
#[cfg(any(target_pointer_width = "64", test))]
#[inline(always)]
fn direct(i: usize) -> Option<u8> {
    (KNOWN[i / 32] & (1 << (i % 32)) != 0).then(|| DIRECT[i])
}

/// The 32-bit lookup of an id below [`DIRECT_IDS`]: its rank among the ids that exist, from
/// [`RANK`] and the bits of its [`KNOWN`] word below it, indexes [`DENSE`].
#[cfg(any(not(target_pointer_width = "64"), test))]
#[inline(always)]
fn ranked(i: usize) -> Option<u8> {
    let (w, bit) = (i / 32, 1u32 << (i % 32));
    let word = *KNOWN.get(w)?;
    if word & bit == 0 {
        return None;
    }
    let rank = usize::from(*RANK.get(w)?) + (word & (bit - 1)).count_ones() as usize;
    DENSE.get(rank).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::dialects::common::MavMessage;
    use mavlink::Message;

    #[test]
    fn matches_the_mavlink_crate() {
        assert_eq!(MavMessage::all_ids().len(), IDS.len());
        for &id in MavMessage::all_ids() {
            assert_eq!(
                crc_extra(id),
                Some(MavMessage::extra_crc(id)),
                "message {id}"
            );
        }
        // The 32-bit lookup (the firmware's) gives what the host's does for every id it serves.
        for i in 0..DIRECT_IDS {
            assert_eq!(ranked(i), direct(i), "message {i}");
        }
        assert_eq!(crc_extra(3), None);
        assert_eq!(crc_extra(70_000), None);
        // Every id in and around the direct table, and around the high ones.
        for id in (0..=DIRECT_IDS as u32 + 10).chain(8_990..13_000) {
            let want = MavMessage::all_ids()
                .contains(&id)
                .then(|| MavMessage::extra_crc(id));
            assert_eq!(crc_extra(id), want, "message {id}");
        }
    }
}
