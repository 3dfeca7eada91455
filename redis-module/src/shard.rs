//! A shard opened for one call: its header checked, its lines set or tested in place. The
//! bit work of every command is here; `commands` parses arguments and replies.

use blockbloom::{KeyHash, Probe};
use blockbloom_redis::shard_format::{self, ShardIdentity, HEADER_BYTES};

use crate::api::{Ctx, Key, KeyKind};

/// Bytes per 64-byte line.
const LINE_BYTES: usize = 64;
/// Header bytes read for the identity: the 64-byte header and, on an expiring filter's
/// shard, the window after it.
const IDENTITY_BYTES: usize = HEADER_BYTES as usize + 8;

/// An opened shard: the key, who it belongs to, and which lines it holds.
pub struct Shard<'c> {
    pub key: Key<'c>,
    pub id: ShardIdentity,
    /// The filter-wide index of the shard's first line.
    pub first_line: u64,
    /// Lines it holds.
    pub lines: u64,
}

/// Why a shard cannot serve a call.
pub enum Refusal {
    /// The shard is missing, or of another incarnation: its first 8 header bytes (what the
    /// client compares; empty for a missing shard). The client re-arms the filter.
    Lost(Vec<u8>),
    /// An error reply (wrong type, a damaged header, an expiring filter, …).
    Error(String),
}

impl From<String> for Refusal {
    fn from(e: String) -> Refusal {
        Refusal::Error(e)
    }
}

/// Opens shard `key` (number `index`) to read or write, and checks its header: of
/// incarnation `incarnation` where one is named, a plain filter's shard or (`planes`) an
/// expiring filter's in the planes layout; any other is refused.
pub fn open<'c>(
    ctx: &'c Ctx<'c>,
    key: &[u8],
    index: u64,
    write: bool,
    check_acl: bool,
    incarnation: Option<&[u8]>,
    planes: bool,
) -> Result<Shard<'c>, Refusal> {
    let k = ctx.open(key, write, check_acl)?;
    match k.kind() {
        KeyKind::Empty => return Err(Refusal::Lost(Vec::new())),
        KeyKind::Other | KeyKind::Hash => {
            return Err(Refusal::Error(format!(
                "WRONGTYPE the key '{}' holds something else than a filter's shard",
                String::from_utf8_lossy(key)
            )))
        }
        KeyKind::String => {}
    }
    let bytes = k.bytes();
    let head = &bytes[..bytes.len().min(IDENTITY_BYTES)];
    let first8 = head[..head.len().min(8)].to_vec();
    if incarnation.is_some_and(|want| want != first8.as_slice()) {
        return Err(Refusal::Lost(first8));
    }
    let id = match shard_format::identity(head) {
        Ok(Some(id)) => id,
        Ok(None) => return Err(Refusal::Lost(first8)),
        Err(e) => {
            return Err(Refusal::Error(format!(
                "ERR shard '{}': {e}",
                String::from_utf8_lossy(key)
            )))
        }
    };
    let refused = match (id.expiring, id.planes, planes) {
        (false, _, false) | (true, true, true) => None,
        (false, _, true) => {
            Some("a plain filter's shard: use BB.SHARD.INSERT_IF_ABSENT and BB.SHARD.CONTAINS")
        }
        (true, true, false) => {
            Some("an expiring filter's shard: use BB.SHARD.X* (the expiring commands)")
        }
        (true, false, _) => Some(
            "an expiring filter kept in generations by the Functions: the module serves plain \
             filters and expiring ones in the planes layout",
        ),
    };
    if let Some(why) = refused {
        return Err(Refusal::Error(format!(
            "ERR '{}' is {why}",
            String::from_utf8_lossy(key)
        )));
    }
    let first_line = index.saturating_mul(id.shard_lines);
    let total = id.layout.num_lines();
    if first_line >= total {
        return Err(Refusal::Error(format!(
            "ERR '{}' is shard {index}, but the filter has {} shards",
            String::from_utf8_lossy(key),
            total.div_ceil(id.shard_lines)
        )));
    }
    let lines = id.shard_lines.min(total - first_line);
    Ok(Shard {
        key: k,
        id,
        first_line,
        lines,
    })
}

impl Shard<'_> {
    /// Where hash `h` goes in this shard: its line (within the shard) and bits; `Err` for
    /// a hash of another shard.
    pub fn place(&self, h: u64) -> Result<(usize, Probe), String> {
        let p = self.id.layout.probe_hash(KeyHash::from_bits(h));
        let line = p.line() as u64;
        if line < self.first_line || line >= self.first_line + self.lines {
            return Err(format!(
                "ERR a hash of line {line} sent to the shard of lines {}..{}",
                self.first_line,
                self.first_line + self.lines
            ));
        }
        Ok(((line - self.first_line) as usize, p))
    }

    /// Whether every bit of each probe is set: one answer per probe.
    pub fn contains(&self, probes: &[(usize, Probe)]) -> Vec<bool> {
        let bytes = self.key.bytes();
        probes
            .iter()
            .map(|(line, p)| {
                let at = HEADER_BYTES as usize + line * LINE_BYTES;
                let block = bytes.get(at..at + LINE_BYTES);
                p.mask()
                    .iter()
                    .enumerate()
                    .all(|(w, &m)| m == 0 || block.is_some_and(|b| word(b, w) & m == m))
            })
            .collect()
    }

    /// Sets each probe's bits, in order: `true` for a probe of which a bit was still 0
    /// (a key repeated in the batch is new at most once).
    pub fn insert_if_absent(&mut self, probes: &[(usize, Probe)]) -> Result<Vec<bool>, String> {
        let len = HEADER_BYTES as usize + self.lines as usize * LINE_BYTES;
        let bytes = self.key.bytes_mut(len)?;
        Ok(probes
            .iter()
            .map(|(line, p)| {
                let at = HEADER_BYTES as usize + line * LINE_BYTES;
                let block = &mut bytes[at..at + LINE_BYTES];
                let mut new = false;
                for (w, &m) in p.mask().iter().enumerate() {
                    let old = word(block, w);
                    if m & !old != 0 {
                        new = true;
                        block[8 * w..8 * w + 8].copy_from_slice(&(old | m).to_le_bytes());
                    }
                }
                new
            })
            .collect())
    }
}

/// Word `w` of a 64-byte line (eight little-endian `u64`s, as in a snapshot).
fn word(line: &[u8], w: usize) -> u64 {
    u64::from_le_bytes(line[8 * w..8 * w + 8].try_into().expect("8 bytes"))
}
