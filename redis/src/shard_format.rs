//! Not public API: a shard as the server module (`blockbloom-redis-module`) reads it, so
//! that the shard format keeps one owner (`meta`). No stability promise.

use blockbloom::planes_in_place::ShardClock;
use blockbloom::Layout;

pub use crate::estimates::Estimates;
use crate::meta::Meta;
/// Bytes of a shard's header; its lines follow.
pub const HEADER_BYTES: u64 = crate::meta::SHARD_HEADER_BYTES;
/// Bytes before the lines of an expiring filter's shard in the planes layout: the header,
/// then the clock line (the window, then [`blockbloom::planes_in_place::ShardClock`]'s
/// four words, little-endian).
pub const PLANES_HEAD_BYTES: u64 = crate::meta::PLANES_HEAD_BYTES;

/// The version of the module's commands that this client speaks: `BB.VERSION` answers the
/// module's, and a client uses the module only where they are equal.
pub const MODULE_PROTOCOL: i64 = 2;

/// Epochs above this are no time's (epochs are at least 250 ms: 2^64 ns is 2^37 of them).
pub const MAX_EPOCH: u64 = 1 << 40;

/// The clock line of an expiring filter's shard in the planes layout (bytes
/// `HEADER_BYTES..PLANES_HEAD_BYTES`): the window, the [`ShardClock`]'s four words, and a
/// checksum of the five (0 with the four at 0: a shard no write has used), little-endian.
/// `Err` for a clock that is damaged (its checksum, or an epoch no time has).
///
/// ```
/// use blockbloom::planes_in_place::ShardClock;
/// use blockbloom_redis::shard_format::{read_clock, write_clock, PLANES_HEAD_BYTES};
/// let mut shard = vec![0u8; PLANES_HEAD_BYTES as usize];
/// assert_eq!(read_clock(&shard), Ok(ShardClock::default()));
/// let c = ShardClock { newest: 9, swept: 10, pass: 0, cursor: 0 };
/// write_clock(&mut shard, &c);
/// assert_eq!(read_clock(&shard), Ok(c));
/// shard[80] ^= 1;
/// assert!(read_clock(&shard).is_err());
/// ```
///
/// [`ShardClock`]: blockbloom::planes_in_place::ShardClock
pub fn read_clock(shard: &[u8]) -> Result<ShardClock, String> {
    let w = clock_words(shard).ok_or("the shard is cut short")?;
    let c = ShardClock {
        newest: w[1],
        swept: w[2],
        pass: w[3],
        cursor: w[4],
    };
    let fresh = w[5] == 0 && c == ShardClock::default();
    if !fresh && w[5] != clock_sum(&w) {
        return Err("its clock line's checksum does not match (damaged)".into());
    }
    if [c.newest, c.swept, c.pass].iter().any(|&x| x > MAX_EPOCH) {
        return Err("its clock line holds an epoch no time has (damaged)".into());
    }
    Ok(c)
}

/// Writes the clock `c` and its checksum into `shard`'s clock line (see [`read_clock`]).
pub fn write_clock(shard: &mut [u8], c: &ShardClock) {
    let mut w = clock_words(shard).expect("a planes shard's head");
    w[1..5].copy_from_slice(&[c.newest, c.swept, c.pass, c.cursor]);
    w[5] = clock_sum(&w);
    for (i, v) in w.iter().enumerate().skip(1) {
        let at = HEADER_BYTES as usize + 8 * i;
        shard[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// The clock line's first six words.
fn clock_words(shard: &[u8]) -> Option<[u64; 6]> {
    let line = shard.get(HEADER_BYTES as usize..HEADER_BYTES as usize + 48)?;
    Some(core::array::from_fn(|i| {
        u64::from_le_bytes(line[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }))
}

/// The checksum of the window and the clock (never 0, the mark of a fresh clock).
fn clock_sum(w: &[u64; 6]) -> u64 {
    let bytes: Vec<u8> = w[..5].iter().flat_map(|v| v.to_le_bytes()).collect();
    xxhash_rust::xxh3::xxh3_64(&bytes).max(1)
}

/// What a shard's header says: who it belongs to and how keys are placed.
#[derive(Clone)]
pub struct ShardIdentity {
    /// The filter's incarnation, as the header holds it (8 bytes, big-endian): what every
    /// call names.
    pub incarnation: [u8; 8],
    /// Where keys go (seed, lines, hashes).
    pub layout: Layout,
    /// The hashing key (filters mix bits only with the same one).
    pub seed: u128,
    /// Lines per shard (the last shard may have fewer).
    pub shard_lines: u64,
    /// An expiring filter's shard: in the planes layout (`planes`, the module's expiring
    /// type), or holding the clock of generations kept elsewhere (the Functions').
    pub expiring: bool,
    /// An expiring filter in the planes layout: its lines follow [`PLANES_HEAD_BYTES`].
    pub planes: bool,
    /// An expiring filter's window, in nanoseconds (0: a plain filter).
    pub window_ns: u64,
    /// Keys the filter was sized for, and its target rate.
    pub capacity: u64,
    /// The target false-positive rate.
    pub fpr: f64,
}

/// Reads a shard's header: `Ok(None)` where there is none (all zero or cut short: the shard
/// was lost or never armed), `Err` with a message for a damaged one.
pub fn identity(header: &[u8]) -> Result<Option<ShardIdentity>, String> {
    let Some(stored) = Meta::from_header(header).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let m: &Meta = &stored.meta;
    Ok(Some(ShardIdentity {
        incarnation: stored.incarnation.to_be_bytes(),
        layout: Layout::new(m.seed, m.blocks, m.hashes).map_err(|e| e.to_string())?,
        seed: m.seed,
        shard_lines: m.shard_blocks,
        expiring: m.window_ns != 0,
        planes: m.planes,
        window_ns: m.window_ns,
        capacity: m.capacity,
        fpr: m.fpr,
    }))
}

/// A filter to create, exactly as a client creates one: its parameter hash and its shards
/// (each created at its full length, its header first).
pub struct NewFilter {
    /// `{name}.meta`.
    pub meta_key: String,
    /// The parameter hash's fields and values, alternating.
    pub meta_fields: Vec<Vec<u8>>,
    /// Each shard's key, header and length in bytes.
    pub shards: Vec<(String, Vec<u8>, u64)>,
    /// The first shard's header: everything a replica or a loader needs to create the
    /// same filter ([`new_filter_like`]).
    pub header: Vec<u8>,
}

impl NewFilter {
    fn of(name: &str, meta: &Meta, incarnation: u64) -> NewFilter {
        NewFilter {
            meta_key: format!("{{{name}}}.meta"),
            meta_fields: meta.field_args(incarnation),
            shards: (0..meta.shards())
                .map(|i| {
                    (
                        shard_key(name, i),
                        meta.armed_shard(incarnation),
                        meta.shard_len(i),
                    )
                })
                .collect(),
            header: meta.header(incarnation).to_vec(),
        }
    }
}

/// Filter `name` for `capacity` keys at rate `fpr`, sized as `RedisBuilder::create` sizes
/// it (the seed random unless given, shards of at most `shard_bytes`, 64 MiB by default),
/// with a fresh incarnation.
pub fn new_filter(
    name: &str,
    capacity: u64,
    fpr: f64,
    seed: Option<u128>,
    shard_bytes: Option<u64>,
) -> Result<NewFilter, String> {
    let mut b = crate::RedisBloomFilter::builder("redis://unused", name)
        .capacity(capacity)
        .fpr(fpr);
    if let Some(bytes) = shard_bytes {
        b = b.shard_bytes(bytes);
    }
    let meta = b.proposed(seed).map_err(|e| e.to_string())?;
    Ok(NewFilter::of(name, &meta, crate::meta::new_incarnation()))
}

/// Filter `name` with the parameters, seed and incarnation in `header` (a shard's header,
/// checked): how a replica re-creates a filter, and how a dump is loaded.
pub fn new_filter_like(name: &str, header: &[u8]) -> Result<NewFilter, String> {
    match Meta::from_header(header).map_err(|e| e.to_string())? {
        Some(s) if s.meta.window_ns == 0 => Ok(NewFilter::of(name, &s.meta, s.incarnation)),
        Some(_) => Err("an expiring filter's header".into()),
        None => Err("no header".into()),
    }
}

/// The key of shard `i` of filter `name`.
pub fn shard_key(name: &str, i: u64) -> String {
    format!("{{{name}.{i}}}.bits")
}

/// The shard number in a shard's key (`{name.i}.bits`), if it is one.
pub fn shard_index(key: &[u8]) -> Option<u64> {
    let tag = key.strip_suffix(b"}.bits")?;
    let dot = tag.iter().rposition(|&b| b == b'.')?;
    let digits = std::str::from_utf8(&tag[dot + 1..]).ok()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_key_gives_back_its_index() {
        assert_eq!(shard_index(shard_key("crawl:seen", 7).as_bytes()), Some(7));
        assert_eq!(shard_index(shard_key("a.b}c", 12).as_bytes()), Some(12));
        assert_eq!(shard_index(b"{crawl.x}.bits"), None);
        assert_eq!(shard_index(b"crawl.3"), None);
    }
}
