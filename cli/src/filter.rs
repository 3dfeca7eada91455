//! The filters the command line works with — fixed-size, growing or expiring, in memory or
//! a state file — behind one type, so that `dedup`, `stats` and `merge` share one dispatch.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use blockbloom::{BloomFilter, Error, ExpiringBloomFilter, GrowableBloomFilter};

use crate::Failure;

/// A line as a key: hashed exactly like a `str` with the same bytes, so a state file
/// written here answers `filter.contains("line")` from Rust code.
pub(crate) use blockbloom::StrBytes as Line;

/// The first layer of a growing filter (in memory, or a new `--state` without `--capacity`)
/// holds this many lines; each further layer twice the last.
pub(crate) const INITIAL_CAPACITY: u64 = 100_000;
/// The rate of a new filter when `--fpr` is not given.
pub(crate) const DEFAULT_FPR: f64 = 0.01;
/// Distinct lines per window of a new expiring filter when `--capacity` is not given
/// (about 6.8 MB at 1%).
pub(crate) const EXPIRING_CAPACITY: u64 = 1_000_000;

/// What a new filter is made of (`dedup`'s options); `None` takes the default, or, for an
/// existing state, the state's own.
#[derive(Clone, Copy, Default)]
pub(crate) struct Wanted {
    pub(crate) capacity: Option<u64>,
    pub(crate) fpr: Option<f64>,
    pub(crate) block_bits: Option<u32>,
    pub(crate) seed: Option<u128>,
    /// `--expire-after`: an expiring filter (never given with `block_bits`).
    pub(crate) expire_after: Option<Duration>,
    /// `--worst-burst`: an expiring filter sized for the worst burst (`Arrival::WorstBurst`).
    pub(crate) worst_burst: bool,
    /// How lines are made keys: 0 as they are, else `UrlCanonicalizer::key_format` of the
    /// `--canonical-urls` options. Recorded in a new state; an existing one must have it.
    pub(crate) key_format: u64,
}

/// A fixed-size, growing or expiring filter (one per run: the size difference does not
/// matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Filter {
    Fixed(BloomFilter),
    Growing(GrowableBloomFilter),
    Expiring(ExpiringBloomFilter),
}

/// The builders of a new filter made of `w`: expiring with a window, else fixed-size with a
/// capacity, else growing.
enum NewFilter {
    Fixed(blockbloom::Builder),
    Growing(blockbloom::GrowableBuilder),
    Expiring(blockbloom::ExpiringBuilder),
}

impl NewFilter {
    fn of(w: &Wanted) -> NewFilter {
        let fpr = w.fpr.unwrap_or(DEFAULT_FPR);
        if let Some(window) = w.expire_after {
            let b = ExpiringBloomFilter::builder()
                .expire_after(window)
                .capacity(w.capacity.unwrap_or(EXPIRING_CAPACITY))
                .fpr(fpr)
                .arrival(arrival_of(w))
                .key_format(w.key_format);
            return NewFilter::Expiring(match w.seed {
                Some(s) => b.seed(s),
                None => b,
            });
        }
        match w.capacity {
            Some(c) => {
                let b = BloomFilter::builder()
                    .capacity(c)
                    .fpr(fpr)
                    .block_bits(w.block_bits.unwrap_or(512))
                    .key_format(w.key_format);
                NewFilter::Fixed(match w.seed {
                    Some(s) => b.seed(s),
                    None => b,
                })
            }
            None => {
                let b = GrowableBloomFilter::builder()
                    .initial_capacity(INITIAL_CAPACITY)
                    .fpr(fpr)
                    .key_format(w.key_format);
                NewFilter::Growing(match w.seed {
                    Some(s) => b.seed(s),
                    None => b,
                })
            }
        }
    }
}

impl Filter {
    /// A new filter in memory: fixed-size with `--capacity`, else growing.
    pub(crate) fn in_memory(w: &Wanted) -> Result<Filter, Error> {
        Ok(match NewFilter::of(w) {
            NewFilter::Fixed(b) => Filter::Fixed(b.build()?),
            NewFilter::Growing(b) => Filter::Growing(b.build()?),
            NewFilter::Expiring(b) => Filter::Expiring(b.build()?),
        })
    }

    /// The state at `path`, checked against what `w` gives, or a new one made of `w`
    /// (growing unless `w` has a capacity). Other parameters than the state's are an
    /// [`Error::Conflict`].
    pub(crate) fn open_state(path: &Path, w: &Wanted) -> Result<Filter, Error> {
        let Some(state) = Filter::open_existing(path, false)? else {
            // New (or made by another process in the meantime: the library's open of the
            // same parameters takes that one, and refuses other parameters).
            return Ok(match NewFilter::of(w) {
                NewFilter::Fixed(b) => Filter::Fixed(b.open_file(path)?),
                NewFilter::Growing(b) => Filter::Growing(b.open_file(path)?),
                NewFilter::Expiring(b) => Filter::Expiring(b.open_file(path)?),
            });
        };
        state.check(w)?;
        Ok(state)
    }

    /// [`Error::Conflict`] naming the first parameter of `w` that this filter does not have.
    fn check(&self, w: &Wanted) -> Result<(), Error> {
        let conflict = |what, file: String, requested: String| {
            Err(Error::Conflict {
                what,
                file,
                requested,
            })
        };
        match (self, w.expire_after) {
            (Filter::Expiring(e), Some(d)) if e.expire_after() != d => {
                return conflict(
                    "expire-after",
                    human_duration(e.expire_after()),
                    human_duration(d),
                )
            }
            (Filter::Fixed(_) | Filter::Growing(_), Some(d)) => {
                return conflict(
                    "kind",
                    "a filter that never forgets (made without --expire-after)".into(),
                    format!("--expire-after {}", human_duration(d)),
                )
            }
            _ => {}
        }
        match self {
            Filter::Expiring(e) if w.worst_burst && e.arrival() != arrival_of(w) => {
                return conflict(
                    "arrival",
                    "a steady rate (made without --worst-burst)".into(),
                    "--worst-burst".into(),
                )
            }
            _ => {}
        }
        match (self, w.capacity) {
            (Filter::Expiring(e), Some(c)) if e.capacity() != c => {
                return conflict("capacity", e.capacity().to_string(), c.to_string())
            }
            (Filter::Growing(_), Some(c)) => {
                return conflict(
                    "kind",
                    "a growing filter (made without --capacity)".into(),
                    format!("a fixed --capacity {c}"),
                )
            }
            (Filter::Fixed(f), Some(c)) if f.capacity() != c => {
                return conflict("capacity", f.capacity().to_string(), c.to_string())
            }
            _ => {}
        }
        if let Some(b) = w.block_bits.filter(|&b| b != self.block_bits()) {
            return conflict("block size", self.block_bits().to_string(), b.to_string());
        }
        if let Some(p) = w.fpr.filter(|&p| p != self.keys().target_fpr()) {
            return conflict(
                "target fpr",
                self.keys().target_fpr().to_string(),
                p.to_string(),
            );
        }
        if let Some(s) = w.seed.filter(|&s| s != self.seed()) {
            return conflict("seed", self.seed().to_string(), s.to_string());
        }
        if w.key_format != self.key_format() {
            return conflict(
                "keys",
                describe_key_format(self.key_format()),
                describe_key_format(w.key_format),
            );
        }
        Ok(())
    }

    /// How the filter's keys were made from lines (see [`Wanted::key_format`]).
    pub(crate) fn key_format(&self) -> u64 {
        match self {
            Filter::Fixed(f) => f.key_format(),
            Filter::Growing(g) => g.key_format(),
            Filter::Expiring(e) => e.key_format(),
        }
    }

    /// How the open found a state's file (`None`: a snapshot, loaded and checked whole).
    pub(crate) fn condition(&self) -> Option<blockbloom::FileCondition> {
        match self {
            Filter::Fixed(f) => f.file_condition(),
            Filter::Growing(g) => g.file_condition(),
            Filter::Expiring(e) => e.file_condition(),
        }
    }

    /// The state at `path`, of whichever kind it is, opened for use; `None` if there is no
    /// file (with `must_exist`, an error).
    pub(crate) fn open_existing(path: &Path, must_exist: bool) -> Result<Option<Filter>, Error> {
        match GrowableBloomFilter::open_file_existing(path) {
            Ok(g) => Ok(Some(Filter::Growing(g))),
            Err(Error::Conflict { what: "kind", .. }) => {
                match BloomFilter::open_file_existing(path) {
                    Err(Error::Conflict { what: "kind", .. }) => Ok(Some(Filter::Expiring(
                        ExpiringBloomFilter::open_file_existing(path)?,
                    ))),
                    f => Ok(Some(Filter::Fixed(f?))),
                }
            }
            Err(Error::Io {
                kind: io::ErrorKind::NotFound,
                ..
            }) if !must_exist => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The state or snapshot at `path` to read (`stats`, `merge`): a sealed fixed-size file
    /// is loaded without changing it; one in use, or left in use by a killed run, is opened
    /// as the file-backed filter it is (closing it then seals it); a growing state is opened
    /// with its layers. A later layer's file named on its own (`s.bloom.1`) is refused,
    /// naming the state it belongs to.
    pub(crate) fn inspect(path: &Path) -> Result<Filter, Failure> {
        let fail = |e: Error| Failure::Io(format!("{}: {e}", path.display()));
        match BloomFilter::load(path) {
            Ok(f) => Ok(Filter::Fixed(f)),
            Err(Error::InUse) => Ok(Filter::open_existing(path, true)
                .map_err(fail)?
                .expect("must_exist")),
            Err(Error::InvalidSnapshot(why)) if why.contains("ExpiringBloomFilter") => Ok(
                Filter::Expiring(ExpiringBloomFilter::load(path).map_err(fail)?),
            ),
            Err(Error::InvalidSnapshot(why)) if why.contains("GrowableBloomFilter") => {
                if let Some(first) = first_layer_of(path) {
                    return Err(Failure::Io(format!(
                        "{} is a layer of the growing state {}: name that file (its layers \
                         come with it)",
                        path.display(),
                        first.display()
                    )));
                }
                Ok(Filter::Growing(
                    GrowableBloomFilter::open_file_existing(path).map_err(fail)?,
                ))
            }
            Err(e) => Err(fail(e)),
        }
    }

    /// The filter's key operations, whichever kind it is: the family's
    /// [`Filter`](blockbloom::Filter) trait, so that `dedup` is written once for every kind.
    /// Its `insert_if_absent_many` takes the batched path (blocks prefetched ahead, so a
    /// large filter's cache misses overlap) and answers `true` for exactly the lines this
    /// call won, in every process sharing the filter; `try_reserve` grows a growing filter
    /// now if it must, and says why if it cannot.
    pub(crate) fn keys(&self) -> &(dyn for<'a> blockbloom::Filter<Line<'a>> + Sync) {
        match self {
            Filter::Fixed(f) => f,
            Filter::Growing(g) => g,
            Filter::Expiring(e) => e,
        }
    }

    pub(crate) fn seed(&self) -> u128 {
        match self {
            Filter::Fixed(f) => f.seed(),
            Filter::Growing(g) => g.seed(),
            Filter::Expiring(e) => e.seed(),
        }
    }

    fn block_bits(&self) -> u32 {
        match self {
            Filter::Fixed(f) => f.block_bits(),
            Filter::Growing(_) | Filter::Expiring(_) => 512,
        }
    }

    /// Bits and bytes of memory.
    pub(crate) fn size(&self) -> (u64, usize) {
        match self {
            Filter::Fixed(f) => (f.num_bits(), f.memory_bytes()),
            Filter::Growing(g) => (8 * g.memory_bytes() as u64, g.memory_bytes()),
            Filter::Expiring(e) => (512 * e.num_lines(), e.memory_bytes()),
        }
    }

    /// How a run claims its lines, chosen once before the first ([`Claims`]).
    pub(crate) fn claims(&self) -> Claims<'_> {
        let at = match (self, test_clock()) {
            (Filter::Expiring(e), Some(t)) => Some((e, t)),
            _ => None,
        };
        Claims {
            keys: self.keys(),
            at,
        }
    }

    /// Flushes and (if last) seals a state's files.
    pub(crate) fn close(self) -> Result<(), Error> {
        match self {
            Filter::Fixed(f) => f.close(),
            Filter::Growing(g) => g.close(),
            Filter::Expiring(e) => e.close(),
        }
    }

    /// The false-positive rate now (an expiring filter's at the test clock's time, if set).
    pub(crate) fn estimated_fpr(&self) -> f64 {
        match self {
            Filter::Expiring(e) => expiring_fpr(e),
            _ => self.keys().estimated_fpr(),
        }
    }

    /// Lines between two readings of [`warning`](Self::warning) during a run (each reads
    /// the whole filter): one per capacity, at least 2^20.
    pub(crate) fn warning_interval(&self) -> u64 {
        let capacity = match self {
            Filter::Fixed(f) => f.capacity(),
            Filter::Growing(_) => 0,
            Filter::Expiring(e) => e.capacity(),
        };
        capacity.max(1 << 20)
    }

    /// What to warn about, once, during a run or at its end: a fixed filter past its
    /// capacity, an expiring one past twice its rate.
    pub(crate) fn warning(&self, what: &str) -> Option<String> {
        match self {
            Filter::Fixed(f) if f.estimated_len() > f.capacity() => Some(format!(
                "{what} holds more lines than its capacity ({}): its false-positive rate is now \
                 {:.4}% (target {}%); start a new state with a larger --capacity, or without \
                 --capacity for one that grows",
                f.capacity(),
                100.0 * f.estimated_fpr(),
                100.0 * f.target_fpr()
            )),
            Filter::Expiring(e) if expiring_fpr(e) > 2.0 * e.target_fpr() => Some(format!(
                "{what}'s false-positive rate is now {:.4}%, more than twice its target \
                 ({}%): it has seen more distinct lines in an epoch (a third of the window) \
                 than its capacity ({}) per window at a steady rate gives, so new lines are \
                 taken for repeats more often; start a new state with a larger --capacity, or \
                 with --worst-burst if lines come in bursts",
                100.0 * expiring_fpr(e),
                100.0 * e.target_fpr(),
                e.capacity(),
            )),
            _ => None,
        }
    }
}

/// The first file of the growing state whose later layer `path` is (`s.bloom` for
/// `s.bloom.1`), if it is one.
fn first_layer_of(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let (stem, n) = name.rsplit_once('.')?;
    n.parse::<usize>().ok().filter(|&n| n >= 1)?;
    let first = path.with_file_name(stem);
    let chain = GrowableBloomFilter::open_file_existing(&first).ok()?;
    let same = |a: &Path, b: &Path| {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    };
    let layers = chain.layer_paths();
    layers[1..].iter().any(|l| same(l, path)).then_some(first)
}

/// What a new expiring filter of `w` is sized for.
fn arrival_of(w: &Wanted) -> blockbloom::Arrival {
    match w.worst_burst {
        true => blockbloom::Arrival::WorstBurst,
        false => blockbloom::Arrival::Steady,
    }
}

/// An expiring filter's rate now, or at the test clock's time.
fn expiring_fpr(e: &ExpiringBloomFilter) -> f64 {
    e.estimated_fpr_at(test_clock().unwrap_or_else(std::time::SystemTime::now))
}

/// A run's way to claim lines: the filter's keys, or for an expiring filter under the test
/// clock ([`test_clock`]) its `_at` forms at that time.
pub(crate) struct Claims<'f> {
    keys: &'f (dyn for<'a> blockbloom::Filter<Line<'a>> + Sync),
    at: Option<(&'f ExpiringBloomFilter, std::time::SystemTime)>,
}

impl Claims<'_> {
    /// Room for `n` more lines (a growing filter's next layers), before any is claimed.
    pub(crate) fn reserve(&self, n: u64) -> Result<(), Error> {
        self.keys.try_reserve(n)
    }

    /// Claims `lines`: `out[i]` says whether line `i` was new here.
    pub(crate) fn claim(&self, lines: &[Line<'_>], out: &mut [bool]) {
        match self.at {
            Some((e, t)) => e.insert_if_absent_many_at(lines, t, out),
            None => self.keys.insert_if_absent_many(lines, out),
        }
    }
}

/// For tests only: `BLOCKBLOOM_TEST_CLOCK`, seconds since 1970, is the time an expiring
/// filter works at instead of now, so that a test of the window does not depend on how
/// fast its runs finish. (A time ahead of this machine's clock is taken as the clock.)
pub(crate) fn test_clock() -> Option<std::time::SystemTime> {
    static CLOCK: std::sync::OnceLock<Option<std::time::SystemTime>> = std::sync::OnceLock::new();
    *CLOCK.get_or_init(|| {
        let secs: f64 = std::env::var("BLOCKBLOOM_TEST_CLOCK").ok()?.parse().ok()?;
        std::time::UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(secs).ok()?)
    })
}

/// A key format (`UrlCanonicalizer::key_format`) as the options that make it.
pub(crate) fn describe_key_format(k: u64) -> String {
    if k == 0 {
        return "lines as they are (made without --canonical-urls)".into();
    }
    let mut s = String::from("--canonical-urls");
    if k & 2 != 0 {
        s.push_str(" --strip-default-port");
    }
    if k & 4 != 0 {
        s.push_str(" --strip-trailing-slash");
    }
    if k & 8 != 0 {
        s.push_str(" --keep-fragments");
    }
    if k & 16 != 0 {
        s.push_str(" --drop-blank-values");
    }
    if k & 32 == 0 {
        s.push_str(" --w3lib 2.5");
    }
    if k >> 8 != 0 {
        s.push_str(&format!(
            " with query arguments stripped or another --query-separator (names' hash {:06x})",
            (k >> 8) & 0xff_ffff
        ));
    }
    s
}

/// `d` in the units `--expire-after` takes: "30d", "2h 30m", "1.5s".
pub(crate) fn human_duration(d: Duration) -> String {
    let mut secs = d.as_secs();
    if secs < 60 {
        return format!("{}s", d.as_secs_f64());
    }
    let mut parts = Vec::new();
    for (unit, len) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= len {
            parts.push(format!("{}{unit}", secs / len));
            secs %= len;
        }
    }
    // Seconds and a fraction rounded up to the millisecond (an epoch of a third of a
    // window and a second: "10d 0.334s"), so that an "at most" stays true.
    let millis = u64::from(d.subsec_nanos()).div_ceil(1_000_000);
    if secs > 0 || millis > 0 {
        parts.push(format!("{}s", secs as f64 + millis as f64 / 1000.0));
    }
    parts.join(" ")
}

/// "30d", "12h", "90m", "2s", "1.5h", "45" (seconds) -> a duration, as GNU `timeout` takes.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86_400.0,
        _ => {
            return Err(format!(
                "unknown unit in {s:?}: use s, m, h or d (like 30d)"
            ))
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v * scale >= 1.0 => Duration::try_from_secs_f64(v * scale)
            .ok()
            .filter(|&d| blockbloom::ExpiryWindow::new(d).is_ok())
            .ok_or_else(|| format!("too long: {s:?} (at most 584 years)")),
        Ok(v) if v.is_finite() && v >= 0.0 => Err(format!(
            "{s:?} is shorter than 1s, the clock difference tolerated between runs"
        )),
        _ => Err(format!("not a duration: {s:?} (like 30d, 12h, 90m or 2s)")),
    }
}
