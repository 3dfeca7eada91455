//! `ExpiringBloomFilter`: keys forgotten a fixed time after their insert, in memory or a
//! file.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::*;

/// A set of `str` or `bytes` keys that forgets each key `expire_after` seconds after its
/// insert: a crawler's re-fetch interval. A key is seen for the whole window after the
/// insert that added it, and new again at most a third of the window and a second later;
/// shared by threads (and, through `open_file`, processes) without locks, one winner per
/// new key.
///
/// Sized for `capacity` distinct keys inserted per window at false-positive rate `fpr`;
/// `expire_after` is seconds (a float, at least 1) or a `datetime.timedelta`; `seed` as for
/// `BloomFilter`; `huge_pages`: by default (`None`, or `True`) 2 MiB pages on Linux from
/// the first touch, as at its capacity the filter touches all its pages early in its first
/// window; `False`: 4 KiB pages, for a filter sized far above its keys (Rust's
/// `ExpiringBuilder::huge_pages`).
/// About 11 bytes per key of the window at 1%. Bad parameters raise
/// `ValueError`. The optional `at` of the key methods is the time of the call in seconds
/// since 1970 (`time.time()`, the default): for replaying a log, and for tests. A time
/// ahead of this machine's clock by more than a second is taken as the clock (a host whose
/// clock runs ahead never makes the others forget a key inside its window).
///
/// >>> import time
/// >>> seen = ExpiringBloomFilter(1_000_000, 0.01, expire_after=30 * 86400)
/// >>> seen.insert_if_absent("https://example.com/")
/// True
/// >>> seen.insert_if_absent("https://example.com/", at=time.time() + 400 * 86400)
/// False
/// >>> log = ExpiringBloomFilter(1_000_000, 0.01, expire_after=30 * 86400)
/// >>> t = time.time() - 60 * 86400  # a replay of a log: times up to now
/// >>> log.insert_if_absent("https://example.com/", at=t)
/// True
/// >>> log.insert_if_absent("https://example.com/", at=t + 29 * 86400)
/// False
/// >>> log.insert_if_absent("https://example.com/", at=t + 38 * 86400)
/// True
#[pyclass(frozen, module = "blockbloom")]
pub(crate) struct ExpiringBloomFilter {
    pub(crate) inner: blockbloom::ExpiringBloomFilter,
    /// The absolute path of a file-backed filter (what it pickles as).
    pub(crate) path: Option<std::path::PathBuf>,
}

/// Seconds (an int or float) or a `datetime.timedelta` as a `Duration`; `ValueError` for
/// a negative, infinite or NaN one.
/// `arrival="steady"` or `"worst_burst"` as [`blockbloom::Arrival`] (`ValueError` else).
pub(crate) fn arrival(name: &str) -> PyResult<blockbloom::Arrival> {
    match name {
        "steady" => Ok(blockbloom::Arrival::Steady),
        "worst_burst" => Ok(blockbloom::Arrival::WorstBurst),
        _ => Err(PyValueError::new_err(format!(
            "arrival must be \"steady\" or \"worst_burst\", not {name:?}"
        ))),
    }
}

/// The name `arrival` takes for `a`.
pub(crate) fn arrival_name(a: blockbloom::Arrival) -> &'static str {
    match a {
        blockbloom::Arrival::Steady => "steady",
        blockbloom::Arrival::WorstBurst => "worst_burst",
    }
}

pub(crate) fn duration(obj: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let secs: f64 = if obj.hasattr("total_seconds")? {
        obj.call_method0("total_seconds")?.extract()?
    } else {
        obj.extract()?
    };
    Duration::try_from_secs_f64(secs)
        .map_err(|_| PyValueError::new_err(format!("expire_after: not a duration: {secs}")))
}

/// A single call now (`at` None): `now`, the filter's own clock path, which mostly reads the
/// wall clock's bounds from the thread's time-stamp counter (about 20 ns less than
/// `SystemTime::now()` and a time given); else `at_time` at [`time`]`(at)`.
fn now_or_at<R>(
    at: Option<f64>,
    now: impl FnOnce() -> PyResult<R>,
    at_time: impl FnOnce(SystemTime) -> PyResult<R>,
) -> PyResult<R> {
    match at {
        None => now(),
        Some(_) => at_time(time(at)?),
    }
}

/// `at` (seconds since 1970) as a time, or now: `ValueError` for a negative or NaN time,
/// `OverflowError` for one past what the system's clock can hold (about 2.9e11 years).
/// A time ahead of this machine's clock is taken as the clock (guarantee 6).
pub(crate) fn time(at: Option<f64>) -> PyResult<SystemTime> {
    let Some(s) = at else {
        return Ok(SystemTime::now());
    };
    let d = Duration::try_from_secs_f64(s).map_err(|_| {
        if s.is_finite() && s > 0.0 {
            PyOverflowError::new_err(format!("at: {s} s after 1970 is past the clock's range"))
        } else {
            PyValueError::new_err(format!("at: not a time in seconds since 1970: {s}"))
        }
    })?;
    UNIX_EPOCH.checked_add(d).ok_or_else(|| {
        PyOverflowError::new_err(format!("at: {s} s after 1970 is past the clock's range"))
    })
}

/// A time as seconds since 1970, as `time.time()` gives it.
pub(crate) fn seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

impl ExpiringBloomFilter {
    fn memory(inner: blockbloom::ExpiringBloomFilter) -> Self {
        ExpiringBloomFilter { inner, path: None }
    }
}

#[pymethods]
impl ExpiringBloomFilter {
    #[new]
    #[pyo3(
        signature = (capacity, fpr = 0.01, *, expire_after, seed = None, huge_pages = None, arrival = "steady"),
        text_signature = "(capacity, fpr=0.01, *, expire_after, seed=None, huge_pages=None, arrival='steady')"
    )]
    fn new(
        capacity: Unsigned<u64>,
        fpr: f64,
        expire_after: &Bound<'_, PyAny>,
        seed: Option<Unsigned<u128>>,
        huge_pages: Option<bool>,
        arrival: &str,
    ) -> PyResult<Self> {
        let mut b = blockbloom::ExpiringBloomFilter::builder()
            .expire_after(duration(expire_after)?)
            .capacity(capacity.0)
            .fpr(fpr)
            .arrival(self::arrival(arrival)?)
            .huge_pages(huge_pages.unwrap_or(true));
        if let Some(Unsigned(s)) = seed {
            b = b.seed(s);
        }
        Ok(Self::memory(b.build().map_err(err)?))
    }

    /// The filter in the file at `path`, shared by every process that opens it: created
    /// with `capacity`, `fpr` and `expire_after` if missing; an existing file must have
    /// those and `arrival` (`ValueError`), or, with all three omitted, is opened with its
    /// own. Pickled, it is that path. Checked as `BloomFilter.open_file`'s files are
    /// (`verify`).
    #[staticmethod]
    #[pyo3(signature = (path, capacity = None, fpr = None, expire_after = None, verify = true, arrival = "steady"))]
    fn open_file(
        path: std::path::PathBuf,
        capacity: Option<Unsigned<u64>>,
        fpr: Option<f64>,
        expire_after: Option<&Bound<'_, PyAny>>,
        verify: bool,
        arrival: &str,
    ) -> PyResult<Self> {
        let arrival = self::arrival(arrival)?;
        let verification = crate::errors::verification(verify);
        let inner = match (capacity, expire_after) {
            (Some(Unsigned(c)), Some(w)) => blockbloom::ExpiringBloomFilter::builder()
                .expire_after(duration(w)?)
                .capacity(c)
                .fpr(fpr.unwrap_or(0.01))
                .arrival(arrival)
                .verification(verification)
                .open_file(&path),
            (None, None) if fpr.is_none() => {
                blockbloom::ExpiringBloomFilter::open_file_existing_with(&path, verification)
            }
            _ => {
                return Err(PyValueError::new_err(
                    "give capacity and expire_after (and fpr) to create the file, or none of \
                     them to open an existing one with its own",
                ))
            }
        }
        .map_err(err)?;
        Ok(ExpiringBloomFilter {
            inner,
            path: Some(absolute(&path)?),
        })
    }

    /// The filter saved at `path` by `save`, in memory (`OSError`, `SnapshotError`).
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(Self::memory(
            blockbloom::ExpiringBloomFilter::load(&path).map_err(err)?,
        ))
    }

    /// Writes a snapshot (planes, clock and window) to `path` atomically. `OSError` on
    /// failure.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(err)
    }

    /// The snapshot as `bytes` (`from_bytes` reads it back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        snapshots::to_bytes(py, &self.inner)
    }

    /// The filter of a snapshot made by `to_bytes` or `save` (`SnapshotError` if damaged).
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(Self::memory(snapshots::from_bytes(data)?))
    }

    /// Pickling: an in-memory filter as its snapshot, a file-backed one as its absolute
    /// path (a worker process unpickles the same shared filter).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        match &slf.get().path {
            Some(path) => Ok((
                py.get_type::<ExpiringBloomFilter>().getattr("open_file")?,
                PyTuple::new(py, [path])?,
            )),
            None => snapshots::reduce_to_bytes::<ExpiringBloomFilter>(py, &slf.get().inner),
        }
    }

    /// `copy.copy`: an in-memory filter with the same planes and clock.
    fn __copy__(&self) -> PyResult<Self> {
        Ok(Self::memory(snapshots::copy_of(&self.inner)?))
    }

    /// `copy.deepcopy`: as `copy.copy`.
    #[pyo3(signature = (_memo, /))]
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__()
    }

    /// Inserts `key` at `at` (default now) if it was not seen within the window: `True`
    /// (fetch it) or `False` (seen, or a false positive; the window is not renewed). Of
    /// several threads or processes offering the same new key at once, one gets `True`.
    #[pyo3(signature = (key, at = None))]
    fn insert_if_absent(&self, key: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<bool> {
        now_or_at(
            at,
            || with_key(key, |k| self.inner.insert_if_absent(&k)),
            |t| with_key(key, |k| self.inner.insert_if_absent_at(&k, t)),
        )
    }

    /// Inserts `key` at `at` (default now): seen for the window from then on, also if it
    /// was present (an insert renews the window).
    #[pyo3(signature = (key, at = None))]
    fn add(&self, key: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<()> {
        now_or_at(
            at,
            || with_key(key, |k| self.inner.insert(&k)),
            |t| with_key(key, |k| self.inner.insert_at(&k, t)),
        )
    }

    /// Whether `key` was inserted within the window before `at` (default now).
    #[pyo3(signature = (key, at = None))]
    fn contains(&self, key: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<bool> {
        now_or_at(
            at,
            || with_key(key, |k| self.inner.contains(&k)),
            |t| with_key(key, |k| self.inner.contains_at(&k, t)),
        )
    }

    /// `key in f`: `contains(key)` now.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }

    /// `insert_if_absent` for every key, all at `at` (default now); every key is read
    /// first (a bad key raises `TypeError` before any is inserted).
    #[pyo3(signature = (keys, at = None))]
    fn insert_if_absent_many<'py>(
        &self,
        keys: &Bound<'py, PyAny>,
        at: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let t = time(at)?;
        each_key(keys, |ks, out| {
            self.inner.insert_if_absent_many_at(ks, t, out)
        })
    }

    /// `[f.contains(key, at) for key in keys]` in one call.
    #[pyo3(signature = (keys, at = None))]
    fn contains_many<'py>(
        &self,
        keys: &Bound<'py, PyAny>,
        at: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let t = time(at)?;
        each_key(keys, |ks, out| self.inner.contains_many_at(ks, t, out))
    }

    /// Inserts every key of `keys` at `at` (default now), like `set.update`.
    #[pyo3(signature = (keys, at = None))]
    fn update(&self, keys: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<()> {
        let t = time(at)?;
        each_key(keys, |ks, _| self.inner.insert_many_at(ks, t)).map(drop)
    }

    /// For a file-backed filter: writes its changed pages to the file and waits for the
    /// disk. `OSError` if the write-back fails.
    fn flush(&self) -> PyResult<()> {
        self.inner.flush().map_err(err)
    }

    /// The window, in seconds.
    #[getter]
    fn expire_after(&self) -> f64 {
        self.inner.expire_after().as_secs_f64()
    }
    /// What `capacity` was sized for: `"steady"` (keys per window at a steady rate) or
    /// `"worst_burst"` (any order within each window: twice the keys live at once).
    #[getter]
    fn arrival(&self) -> &'static str {
        arrival_name(self.inner.arrival())
    }
    /// One epoch (a third of the window and a second), in seconds: the unit in which keys
    /// age.
    #[getter]
    fn epoch(&self) -> f64 {
        self.inner.epoch().as_secs_f64()
    }
    /// Seconds after its insert by which a key is certainly forgotten (four epochs: 4/3 of
    /// `expire_after` + 1 s).
    #[getter]
    fn forgotten_after(&self) -> f64 {
        self.inner.forgotten_after().as_secs_f64()
    }
    /// When the oldest generation still remembered began (seconds since 1970), or `None`
    /// before the first use.
    #[getter]
    fn oldest_generation_start(&self) -> Option<f64> {
        self.inner.oldest_generation_start().map(seconds)
    }
    /// The hashing key, an int below 2**128.
    #[getter]
    fn seed(&self) -> u128 {
        self.inner.seed()
    }
    /// Bits set per key (in the plane of its epoch).
    #[getter]
    fn num_hashes(&self) -> u32 {
        self.inner.num_hashes()
    }
    /// Bytes of memory (or of file) the planes take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// Distinct keys per window the filter was sized for.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    /// The false-positive rate the filter was sized for.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }
    /// Whether the filter is a file (`open_file`).
    #[getter]
    fn is_file_backed(&self) -> bool {
        self.inner.is_file_backed()
    }
    /// An estimate of the distinct keys remembered (offered in the last three to four epochs).
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    /// The expected number of new keys taken for repeats so far (false positives: pages
    /// not fetched), from the fill; `inf` once every bit is set (`estimated_len` is then
    /// 2**64 - 1: the fill bounds neither).
    fn estimated_false_positives(&self) -> f64 {
        self.inner.estimated_false_positives()
    }
    /// The false-positive rate at `at` (default now), estimated from the bits live then.
    #[pyo3(signature = (at = None))]
    fn estimated_fpr(&self, at: Option<f64>) -> PyResult<f64> {
        Ok(self.inner.estimated_fpr_at(time(at)?))
    }
    fn __repr__(&self) -> String {
        format!(
            "ExpiringBloomFilter(capacity={}, fpr={}, expire_after={}, file_backed={})",
            self.inner.capacity(),
            self.inner.target_fpr(),
            self.inner.expire_after().as_secs_f64(),
            if self.inner.is_file_backed() {
                "True"
            } else {
                "False"
            }
        )
    }
}
