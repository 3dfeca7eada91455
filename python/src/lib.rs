//! The `blockbloom` Python package's native module (`blockbloom._blockbloom`): the Rust
//! filters behind a Python API. Keys are `str` or `bytes`: a `str` is hashed as the Rust
//! `&str` of its UTF-8 bytes, and `bytes` exactly like a `str` with those bytes, so a state
//! written by `blockbloom dedup` or a Rust program answers the same here.

use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use blockbloom::KeyHash;
use pyo3::create_exception;
use pyo3::exceptions::{
    PyConnectionError, PyException, PyMemoryError, PyOSError, PyOverflowError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

create_exception!(
    blockbloom,
    SnapshotError,
    PyException,
    "A snapshot or state file is damaged, truncated, of another version, or in use."
);
create_exception!(
    blockbloom,
    RedisError,
    PyConnectionError,
    "Talking to Redis failed, or the filter's state in Redis was lost or conflicts."
);
create_exception!(
    blockbloom,
    StateLost,
    RedisError,
    "The filter's state in Redis was lost (restart, eviction, FLUSHALL): re-send the batch."
);

/// A key's bytes, hashed like a Rust `str` with those bytes (bytes, then 0xff).
struct Key<'a>(&'a [u8]);

impl Hash for Key<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0);
        state.write_u8(0xff);
    }
}

/// The bytes of a `str` (its UTF-8) or `bytes` key, borrowed from the object. The common
/// case, an exact `str`, costs one call into the stable ABI (`PyUnicode_AsUTF8AndSize`) and
/// a type test that calls nothing; subclasses of `str` and `bytes` go through PyO3's checks.
#[inline(always)]
fn key_bytes<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    let p = obj.as_ptr();
    // SAFETY: `p` is a live object, borrowed for `'a`; `PyUnicode_CheckExact` reads its type
    // pointer. For an exact `str`, `PyUnicode_AsUTF8AndSize` returns its UTF-8 buffer
    // (immutable, cached in the object and freed only with it, so valid for `'a`) or NULL
    // with an exception set (lone surrogates).
    unsafe {
        if pyo3::ffi::PyUnicode_CheckExact(p) != 0 {
            let mut len: pyo3::ffi::Py_ssize_t = 0;
            let data = pyo3::ffi::PyUnicode_AsUTF8AndSize(p, &mut len);
            if data.is_null() {
                return Err(PyErr::fetch(obj.py()));
            }
            return Ok(std::slice::from_raw_parts(data.cast::<u8>(), len as usize));
        }
    }
    other_key_bytes(obj)
}

/// [`key_bytes`] for anything but an exact `str`.
#[inline(never)]
fn other_key_bytes<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    Err(PyTypeError::new_err(format!(
        "keys are str or bytes, not {}",
        obj.get_type().name()?
    )))
}

/// Calls `f` with the bytes of a `str` or `bytes` key.
#[inline(always)]
fn with_key<T>(obj: &Bound<'_, PyAny>, f: impl FnOnce(Key<'_>) -> T) -> PyResult<T> {
    Ok(f(Key(key_bytes(obj)?)))
}

/// The keys of an iterable as a tuple (it holds a strong reference to every key, and no
/// other thread can change it, so the keys' bytes stay valid while the GIL is released).
fn key_tuple<'py>(keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    if let Ok(t) = keys.cast::<PyTuple>() {
        return Ok(t.clone());
    }
    if let Ok(l) = keys.cast::<PyList>() {
        return Ok(l.to_tuple());
    }
    PyTuple::new(keys.py(), keys.try_iter()?.collect::<PyResult<Vec<_>>>()?)
}

/// The bytes of every key of `tuple`, read in place.
fn tuple_keys<'a>(tuple: &'a Bound<'_, PyTuple>) -> PyResult<Vec<Key<'a>>> {
    let mut out = Vec::with_capacity(tuple.len());
    for item in tuple.iter_borrowed() {
        let bytes = key_bytes(&item)?;
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // SAFETY: `ptr..ptr + len` is the UTF-8 buffer of a `str` (cached in the object) or the
        // buffer of a `bytes`, both immutable and freed only with their object; the tuple
        // holds a strong reference to the object for all of `'a`, and a tuple cannot be
        // changed, so the buffer outlives `'a` (the borrow checker only sees the shorter
        // borrow of this loop's item).
        out.push(Key(unsafe { std::slice::from_raw_parts(ptr, len) }));
    }
    Ok(out)
}

/// The hashes of the keys of `keys` (a list, a tuple or any iterable) for the `BloomFilter`
/// batches, taken with the GIL held: each key is read where it is — no copy, no new
/// reference — and hashed at once, while its bytes are in cache. The batch then probes the
/// filter with the GIL released, so another Python thread's batch hashes meanwhile. Every
/// key is read before any is inserted: a bad key (`TypeError`) leaves the filter untouched.
fn key_hashes(
    keys: &Bound<'_, PyAny>,
    key_hash: impl Fn(&Key<'_>) -> KeyHash,
) -> PyResult<Vec<KeyHash>> {
    let py = keys.py();
    let hash = |item: &Bound<'_, PyAny>| with_key(item, |k| key_hash(&k));
    if let Ok(list) = keys.cast::<PyList>() {
        let len = list.len();
        let mut out = Vec::with_capacity(len);
        for i in 0..len {
            // SAFETY: `PyList_GetItem` checks `i` against the list's current length (NULL and
            // an IndexError if it shrank) and returns a borrowed reference to a live item;
            // nothing runs Python code before `hash` is done with it (`with_key` reads the
            // key's buffer and calls no method of the object), so the list cannot drop it
            // meanwhile.
            let item = unsafe {
                Borrowed::from_ptr_or_err(py, pyo3::ffi::PyList_GetItem(list.as_ptr(), i as _))?
            };
            out.push(hash(&item)?);
        }
        Ok(out)
    } else if let Ok(tuple) = keys.cast::<PyTuple>() {
        tuple.iter_borrowed().map(|item| hash(&item)).collect()
    } else {
        keys.try_iter()?.map(|item| hash(&item?)).collect()
    }
}

/// A batch's answers as a Python `list` of `bool`, with few calls into the stable ABI (each
/// item set one by one costs two: a new reference and `PyList_SetItem`): the list starts as
/// the majority answer repeated (one C-level pass), then only the other answers are set.
fn answer_list<'py>(py: Python<'py>, answers: &[bool]) -> PyResult<Bound<'py, PyList>> {
    let trues = answers.iter().filter(|&&a| a).count();
    let majority = 2 * trues >= answers.len();
    let list = PyList::new(py, [majority])?
        .as_sequence()
        .repeat(answers.len())?
        .cast_into::<PyList>()?;
    for (i, &a) in answers.iter().enumerate() {
        if a != majority {
            list.set_item(i, a)?;
        }
    }
    Ok(list)
}

/// A batch with one answer per key: hashes `keys` with the GIL held ([`key_hashes`]), runs
/// `probe` on the hashes with it released, and returns the answers as a list. The hashes are
/// freed before the list is made, which then reuses their memory: each is 8 MB for 10^6
/// keys, and fresh pages cost a fault each (42 -> 31 ms a batch of 10^6 URLs in one run,
/// 4,700 -> 600 faults).
fn answered_batch<'py>(
    keys: &Bound<'py, PyAny>,
    key_hash: impl Fn(&Key<'_>) -> KeyHash,
    probe: impl FnOnce(&[KeyHash], &mut [bool]) + Send,
) -> PyResult<Bound<'py, PyList>> {
    let py = keys.py();
    let hs = key_hashes(keys, key_hash)?;
    let out = py.detach(|| {
        let mut out = vec![false; hs.len()];
        probe(&hs, &mut out);
        out
    });
    drop(hs);
    answer_list(py, &out)
}

/// An unsigned integer argument (a capacity, a seed, a block size, a bitset id): negative or
/// too large is a `ValueError` like every other bad parameter, where PyO3's conversion raises
/// `OverflowError`, which an `except ValueError` does not catch.
struct Unsigned<T>(T);

macro_rules! unsigned_arg {
    ($($t:ty),*) => {$(
        impl<'a, 'py> FromPyObject<'a, 'py> for Unsigned<$t> {
            type Error = PyErr;
            fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
                obj.extract::<$t>().map(Unsigned).map_err(|e| {
                    if e.is_instance_of::<PyOverflowError>(obj.py()) {
                        PyValueError::new_err(format!(
                            "{} is out of range: an integer from 0 to {} is expected",
                            *obj, <$t>::MAX
                        ))
                    } else {
                        e
                    }
                })
            }
        }
    )*};
}
unsigned_arg!(u32, u64, u128);

/// The Python exception for a filter error.
fn err(e: blockbloom::Error) -> PyErr {
    use blockbloom::Error as E;
    match e {
        E::Io { kind, message } => {
            let errno = match kind {
                std::io::ErrorKind::NotFound => Some(2),
                std::io::ErrorKind::PermissionDenied => Some(13),
                std::io::ErrorKind::AlreadyExists => Some(17),
                std::io::ErrorKind::FileTooLarge => Some(27),
                std::io::ErrorKind::StorageFull => Some(28),
                _ => None,
            };
            match errno {
                Some(n) => PyOSError::new_err((n, message)),
                None => PyOSError::new_err(message),
            }
        }
        // Something in the way of a file-backed chain's layers: "file exists".
        E::ForeignLayer { .. } => PyOSError::new_err((17, e.to_string())),
        E::AllocationFailed { .. } => PyMemoryError::new_err(e.to_string()),
        E::BadMagic
        | E::UnsupportedVersion(_)
        | E::UnknownHash(_)
        | E::Truncated
        | E::ChecksumMismatch { .. }
        | E::InvalidSnapshot(_)
        | E::InUse => SnapshotError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

fn redis_err(e: blockbloom_redis::Error) -> PyErr {
    use blockbloom_redis::Error as E;
    match e {
        E::StateLost { .. } => StateLost::new_err(e.to_string()),
        E::Filter(f) => err(f),
        E::InvalidShardSize(_) => PyValueError::new_err(e.to_string()),
        e => RedisError::new_err(e.to_string()),
    }
}

/// A set of `str` or `bytes` keys in about 1.2 bytes per key at a 1% false-positive rate,
/// shared by threads without locks: a key inserted is always found; a key never inserted is
/// found with probability about `fpr` once `capacity` keys are in.
///
/// Sized for `capacity` distinct keys at false-positive rate `fpr` (0 < fpr < 1); `seed`,
/// the hashing key, an int below 2**128 (random if `None`; filters to be merged need the
/// same one); `block_bits` 512, 256, 128 or 64 (smaller: faster inserts, more bits per
/// key); `huge_pages` asks Linux for 2 MiB pages (faster beyond the CPU caches). Bad
/// parameters raise `ValueError`. `BloomFilter.open_file` makes one that processes share.
///
/// A `str` is the same key as the `bytes` of its UTF-8, as the Rust `&str` and as a line of
/// `blockbloom dedup`.
///
/// >>> seen = BloomFilter(1_000_000, 0.01)
/// >>> seen.insert_if_absent("https://example.com/")
/// True
/// >>> seen.insert_if_absent(b"https://example.com/")
/// False
/// >>> seen.insert_if_absent_many(["https://example.org/", "https://example.com/"])
/// [True, False]
/// >>> "https://example.org/" in seen
/// True
#[pyclass(frozen, module = "blockbloom")]
struct BloomFilter {
    inner: blockbloom::BloomFilter,
    /// The absolute path of a file-backed filter (what it pickles as).
    path: Option<std::path::PathBuf>,
}

/// `path` made absolute (symbolic links kept, as the filter resolves them itself), so that
/// a pickled file-backed filter opens the same file in a process with another directory.
fn absolute(path: &std::path::Path) -> PyResult<std::path::PathBuf> {
    std::path::absolute(path).map_err(|e| PyOSError::new_err(e.to_string()))
}

#[pymethods]
impl BloomFilter {
    #[new]
    #[pyo3(
        signature = (capacity, fpr = 0.01, seed = None, block_bits = Unsigned(512), huge_pages = false),
        text_signature = "(capacity, fpr=0.01, seed=None, block_bits=512, huge_pages=False)"
    )]
    fn new(
        capacity: Unsigned<u64>,
        fpr: f64,
        seed: Option<Unsigned<u128>>,
        block_bits: Unsigned<u32>,
        huge_pages: bool,
    ) -> PyResult<Self> {
        let mut b = blockbloom::BloomFilter::builder()
            .capacity(capacity.0)
            .fpr(fpr)
            .block_bits(block_bits.0)
            .huge_pages(huge_pages);
        if let Some(Unsigned(s)) = seed {
            b = b.seed(s);
        }
        Ok(BloomFilter {
            inner: b.build().map_err(err)?,
            path: None,
        })
    }

    /// The filter in the file at `path`, shared by every process that opens it (created
    /// if missing). Pickled, it is that path: unpickling opens the same file, so a
    /// `multiprocessing` worker it is passed to shares it.
    #[staticmethod]
    #[pyo3(signature = (path, capacity = None, fpr = None, block_bits = None))]
    fn open_file(
        path: std::path::PathBuf,
        capacity: Option<Unsigned<u64>>,
        fpr: Option<f64>,
        block_bits: Option<Unsigned<u32>>,
    ) -> PyResult<Self> {
        let block_bits = block_bits.map(|b| b.0);
        let inner = match capacity {
            Some(Unsigned(c)) => blockbloom::BloomFilter::builder()
                .capacity(c)
                .fpr(fpr.unwrap_or(0.01))
                .block_bits(block_bits.unwrap_or(512))
                .open_file(&path),
            None if block_bits.is_some() => {
                return Err(PyValueError::new_err(
                    "block_bits needs capacity (an existing file keeps its own block size)",
                ))
            }
            None => blockbloom::BloomFilter::open_file_existing(&path),
        }
        .map_err(err)?;
        Ok(BloomFilter {
            inner,
            path: Some(absolute(&path)?),
        })
    }

    /// The filter saved at `path` by `save` (or by Rust's `BloomFilter::save`), in memory.
    /// `OSError` if the file cannot be read; `SnapshotError` if it is not a snapshot, or a
    /// damaged or truncated one.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(BloomFilter {
            inner: blockbloom::BloomFilter::load(&path).map_err(err)?,
            path: None,
        })
    }

    /// Writes a snapshot to `path` atomically: a crash at any moment leaves the previous file
    /// or the complete new one. Safe while other threads insert. `OSError` on failure (the
    /// temporary file is removed).
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(err)
    }

    /// The snapshot as `bytes` (what `save` writes; `from_bytes` reads it back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut v = Vec::new();
        self.inner.write_to(&mut v).map_err(err)?;
        Ok(PyBytes::new(py, &v))
    }

    /// The filter of a snapshot made by `to_bytes` or `save`; `SnapshotError` if `data` is
    /// not one or is damaged.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(BloomFilter {
            inner: blockbloom::BloomFilter::read_from(data).map_err(err)?,
            path: None,
        })
    }

    /// Pickling: an in-memory filter as its contents (a snapshot), a file-backed one as its
    /// absolute path — a worker process unpickles the same shared filter, not a private
    /// copy whose inserts the others would never see.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let ty = py.get_type::<BloomFilter>();
        match &slf.get().path {
            Some(path) => Ok((ty.getattr("open_file")?, PyTuple::new(py, [path])?)),
            None => Ok((
                ty.getattr("from_bytes")?,
                PyTuple::new(py, [slf.get().to_bytes(py)?])?,
            )),
        }
    }

    /// `copy.copy`: an in-memory filter with the same contents (also of a file-backed one).
    fn __copy__(&self) -> PyResult<Self> {
        let mut v = Vec::new();
        self.inner.write_to(&mut v).map_err(err)?;
        Ok(BloomFilter {
            inner: blockbloom::BloomFilter::read_from(&v[..]).map_err(err)?,
            path: None,
        })
    }

    /// `copy.deepcopy`: as `copy.copy` (a filter holds no Python objects).
    #[pyo3(signature = (_memo, /))]
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__()
    }

    /// Inserts `key`; `True` if it was absent (this call added it), `False` if it was
    /// (probably) present. Of several threads or processes offering the same new key at once,
    /// exactly one gets `True`. Keys are `str` or `bytes` (anything else: `TypeError`).
    fn insert_if_absent(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.insert_if_absent(&k))
    }

    /// Inserts `key` (`insert_if_absent` without the answer). Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn add(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        with_key(key, |k| self.inner.insert(&k))
    }

    /// `key in f`: `False` if `key` was certainly never inserted; `True` if it was, or,
    /// with probability about `target_fpr`, if it was not (a false positive). Keys are
    /// `str` or `bytes` (anything else: `TypeError`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }

    /// `insert_if_absent` for every key: the keys are read and hashed with the GIL held (a bad
    /// key raises before any is inserted), the filter is probed with it released.
    fn insert_if_absent_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        answered_batch(
            keys,
            |k| self.inner.key_hash(k),
            |hs, out| self.inner.insert_if_absent_hashes(hs, out),
        )
    }

    /// `[key in f for key in keys]` in one call, with the GIL released while the filter is
    /// probed. `keys` is any iterable of `str` or `bytes`; a bad key raises `TypeError`.
    fn contains_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        answered_batch(
            keys,
            |k| self.inner.key_hash(k),
            |hs, out| self.inner.contains_hashes(hs, out),
        )
    }

    /// Inserts every key of `keys` (any iterable of `str` or `bytes`), like `set.update`;
    /// a bad key raises `TypeError` before any key is inserted.
    fn update(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        let hs = key_hashes(keys, |k| self.inner.key_hash(k))?;
        py.detach(|| self.inner.insert_hashes(&hs));
        Ok(())
    }

    /// Adds every key of `other`, a filter of the same size, rate, block size and seed
    /// (`ValueError` otherwise): afterwards `key in self` for every key in either.
    fn union(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.union(&other.inner).map_err(err)
    }

    /// `self |= other`: `union`.
    fn __ior__(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.union(&other.inner).map_err(err)
    }

    /// `self | other`: a new filter in memory with the keys of both (`ValueError` if they
    /// differ in size, rate, block size or seed).
    fn __or__(&self, other: &BloomFilter) -> PyResult<Self> {
        let out = self.__copy__()?;
        out.inner.union(&other.inner).map_err(err)?;
        Ok(out)
    }

    /// Keeps only the bits set in both filters (`other` of the same size, rate, block size
    /// and seed, else `ValueError`): afterwards the filter holds every key both held, with
    /// more false positives than a filter of the common keys alone. It clears bits, so a
    /// key inserted meanwhile by another thread or process may be lost: call it when no one
    /// else uses the filter.
    fn intersect(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.intersect(&other.inner).map_err(err)
    }

    /// `self &= other`: `intersect`.
    fn __iand__(&self, other: &BloomFilter) -> PyResult<()> {
        self.inner.intersect(&other.inner).map_err(err)
    }

    /// `self & other`: a new filter in memory, `intersect`ed.
    fn __and__(&self, other: &BloomFilter) -> PyResult<Self> {
        let out = self.__copy__()?;
        out.inner.intersect(&other.inner).map_err(err)?;
        Ok(out)
    }

    /// Removes every key (a file-backed filter's file too). Like `intersect`, call it when
    /// no other thread or process uses the filter.
    fn clear(&self) {
        self.inner.clear()
    }

    /// For a file-backed filter: writes its changed pages to the file and waits for the
    /// disk; every insert that returned before the call then survives a power loss. Does
    /// nothing for a filter in memory. `OSError` if the write-back fails.
    fn flush(&self) -> PyResult<()> {
        self.inner.flush().map_err(err)
    }

    /// Bits per block: 512 (the default), 256, 128 or 64.
    #[getter]
    fn block_bits(&self) -> u32 {
        self.inner.block_bits()
    }

    /// The hashing key, an int below 2**128: `BloomFilter(capacity, fpr, seed=f.seed)`
    /// makes a filter that `union` and `intersect` accept. Keep it private if keys may come
    /// from an adversary: with it, one can craft keys that look already inserted.
    #[getter]
    fn seed(&self) -> u128 {
        self.inner.seed()
    }

    /// Bits in the filter (its size in memory is `memory_bytes`).
    #[getter]
    fn num_bits(&self) -> u64 {
        self.inner.num_bits()
    }
    /// Bits set per key.
    #[getter]
    fn num_hashes(&self) -> u32 {
        self.inner.num_hashes()
    }
    /// Bytes of memory (or of file) the filter's bits take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// The number of distinct keys the filter was sized for.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    /// The false-positive rate the filter was sized for, reached at `capacity` keys.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }
    /// Whether the filter is a file (`open_file`) rather than memory of this process.
    #[getter]
    fn is_file_backed(&self) -> bool {
        self.inner.is_file_backed()
    }
    /// An estimate of the number of distinct keys inserted, from the number of bits set.
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    /// The false-positive rate now, estimated from the bits set.
    fn estimated_fpr(&self) -> f64 {
        self.inner.estimated_fpr()
    }
    fn __repr__(&self) -> String {
        let block = match self.inner.block_bits() {
            512 => String::new(),
            b => format!(", block_bits={b}"),
        };
        format!(
            "BloomFilter(capacity={}, fpr={}, num_bits={}{block}, file_backed={})",
            self.inner.capacity(),
            self.inner.target_fpr(),
            self.inner.num_bits(),
            if self.inner.is_file_backed() {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// A Bloom filter for an unknown number of keys: a chain of filters, each larger than the
/// last, added as they fill, the whole chain below its false-positive rate.
///
/// The first filter holds `initial_capacity` keys; bad parameters raise `ValueError`.
/// `GrowableBloomFilter.open_file` makes one that processes share (and opens a `blockbloom
/// dedup` state made without `--capacity`).
///
/// >>> seen = GrowableBloomFilter(1000, 0.01)
/// >>> keys = [f"https://example.com/{i}" for i in range(5000)]
/// >>> seen.update(keys)
/// >>> all(key in seen for key in keys), seen.num_layers > 1
/// (True, True)
#[pyclass(frozen, module = "blockbloom")]
struct GrowableBloomFilter {
    inner: blockbloom::GrowableBloomFilter,
    /// The absolute path of a file-backed filter (what it pickles as).
    path: Option<std::path::PathBuf>,
}

#[pymethods]
impl GrowableBloomFilter {
    #[new]
    #[pyo3(
        signature = (initial_capacity = Unsigned(100_000), fpr = 0.01, seed = None),
        text_signature = "(initial_capacity=100000, fpr=0.01, seed=None)"
    )]
    fn new(
        initial_capacity: Unsigned<u64>,
        fpr: f64,
        seed: Option<Unsigned<u128>>,
    ) -> PyResult<Self> {
        let mut b = blockbloom::GrowableBloomFilter::builder()
            .initial_capacity(initial_capacity.0)
            .fpr(fpr);
        if let Some(Unsigned(s)) = seed {
            b = b.seed(s);
        }
        Ok(GrowableBloomFilter {
            inner: b.build().map_err(err)?,
            path: None,
        })
    }

    /// The growing filter in the file at `path` (and `path.1`, `path.2`, … as it grows),
    /// shared by every process that opens it; created if missing. Pickled, it is that path
    /// (as `BloomFilter.open_file`'s filters).
    #[staticmethod]
    #[pyo3(signature = (path, initial_capacity = None, fpr = None))]
    fn open_file(
        path: std::path::PathBuf,
        initial_capacity: Option<Unsigned<u64>>,
        fpr: Option<f64>,
    ) -> PyResult<Self> {
        let inner = match (initial_capacity.map(|c| c.0), fpr) {
            (None, None) => match blockbloom::GrowableBloomFilter::open_file_existing(&path) {
                Err(blockbloom::Error::Io {
                    kind: std::io::ErrorKind::NotFound,
                    ..
                }) => blockbloom::GrowableBloomFilter::open_file(&path, 100_000, 0.01),
                other => other,
            },
            (c, p) => blockbloom::GrowableBloomFilter::open_file(
                &path,
                c.unwrap_or(100_000),
                p.unwrap_or(0.01),
            ),
        }
        .map_err(err)?;
        Ok(GrowableBloomFilter {
            inner,
            path: Some(absolute(&path)?),
        })
    }

    /// Pickling: a file-backed filter as its absolute path (unpickled, the same shared
    /// filter); an in-memory one cannot be pickled (`TypeError`).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        match &slf.get().path {
            Some(path) => Ok((
                py.get_type::<GrowableBloomFilter>().getattr("open_file")?,
                PyTuple::new(py, [path])?,
            )),
            None => Err(PyTypeError::new_err(
                "an in-memory GrowableBloomFilter cannot be pickled: \
                 GrowableBloomFilter.open_file(path) makes one that processes share",
            )),
        }
    }

    /// Inserts `key`; `True` if it was absent (this call added it), `False` if it was
    /// (probably) present. Of several threads or processes offering the same new key at once,
    /// exactly one gets `True`. Keys are `str` or `bytes` (anything else: `TypeError`).
    fn insert_if_absent(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.insert_if_absent(&k))
    }
    /// Inserts `key` (`insert_if_absent` without the answer). Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn add(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        with_key(key, |k| self.inner.insert(&k))
    }
    /// `key in f`: `False` if `key` was certainly never inserted; `True` if it was, or,
    /// with probability about `target_fpr`, if it was not. Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }
    /// `[f.insert_if_absent(key) for key in keys]` in one call: the keys are read and hashed
    /// with the GIL held (a bad key raises `TypeError` before any is inserted), the filter is
    /// probed with it released.
    fn insert_if_absent_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        answered_batch(
            keys,
            |k| self.inner.key_hash(k),
            |hs, out| self.inner.insert_if_absent_hashes(hs, out),
        )
    }
    /// `[key in f for key in keys]` in one call, with the GIL released while the filter is
    /// probed. `keys` is any iterable of `str` or `bytes`; a bad key raises `TypeError`.
    fn contains_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        answered_batch(
            keys,
            |k| self.inner.key_hash(k),
            |hs, out| self.inner.contains_hashes(hs, out),
        )
    }
    /// Inserts every key of `keys` (any iterable of `str` or `bytes`); a bad key raises
    /// `TypeError` before any key is inserted.
    fn update(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        let hs = key_hashes(keys, |k| self.inner.key_hash(k))?;
        py.detach(|| {
            self.inner
                .insert_if_absent_hashes(&hs, &mut vec![false; hs.len()])
        });
        Ok(())
    }
    /// For a file-backed filter: writes its changed pages to its files and waits for the
    /// disk; every insert that returned before the call then survives a power loss. Does
    /// nothing in memory. `OSError` if the write-back fails.
    fn flush(&self) -> PyResult<()> {
        self.inner.flush().map_err(err)
    }
    /// Makes room for `additional` more new keys at the target rate: if the last layer
    /// cannot take that many more, the next layer is added now. Raises where that fails —
    /// `OSError` for a file-backed chain (no space, no permission to create the file, or,
    /// errno 17, something in the way of its next file), `MemoryError` in memory — so that
    /// a caller can stop, or at least say so, before the rate rises past `target_fpr`.
    ///
    /// >>> from blockbloom import GrowableBloomFilter
    /// >>> f = GrowableBloomFilter(1000, 0.01)
    /// >>> f.try_reserve(3000)
    /// >>> f.num_layers
    /// 3
    fn try_reserve(&self, py: Python<'_>, additional: u64) -> PyResult<()> {
        py.detach(|| self.inner.try_reserve(additional))
            .map_err(err)
    }
    /// How many filters the chain has (a new, larger one is added when the last is full).
    #[getter]
    fn num_layers(&self) -> usize {
        self.inner.num_layers()
    }
    /// Bytes of memory (or of files) all layers take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// The false-positive rate the whole chain stays below.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }
    /// The capacity of the first layer (each next one is larger).
    #[getter]
    fn initial_capacity(&self) -> u64 {
        self.inner.initial_capacity()
    }
    /// Whether the filter is files (`open_file`) rather than memory of this process.
    #[getter]
    fn is_file_backed(&self) -> bool {
        self.inner.is_file_backed()
    }
    /// True once a layer could not be added (no memory, or no disk space for a file-backed
    /// chain's next file): new keys then go into the last layer, whose false-positive rate
    /// rises past `target_fpr`.
    #[getter]
    fn growth_failed(&self) -> bool {
        self.inner.growth_failed()
    }
    /// An estimate of the number of distinct keys inserted, summed over the layers.
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    /// The false-positive rate now, estimated from the bits set in every layer.
    fn estimated_fpr(&self) -> f64 {
        self.inner.estimated_fpr()
    }
    fn __repr__(&self) -> String {
        format!(
            "GrowableBloomFilter(initial_capacity={}, fpr={}, num_layers={})",
            self.inner.initial_capacity(),
            self.inner.target_fpr(),
            self.inner.num_layers()
        )
    }
}

/// A Bloom filter whose keys can be removed: 4-bit counters instead of bits, four to five
/// times the memory of a `BloomFilter` at the same rate.
///
/// Sized for `capacity` keys at false-positive rate `fpr`; bad parameters raise
/// `ValueError`.
///
/// >>> f = CountingBloomFilter(1000, 0.01)
/// >>> f.add("https://example.com/")
/// >>> f.remove("https://example.com/"), "https://example.com/" in f
/// (True, False)
#[pyclass(frozen, module = "blockbloom")]
struct CountingBloomFilter {
    inner: blockbloom::CountingBloomFilter,
}

#[pymethods]
impl CountingBloomFilter {
    #[new]
    #[pyo3(signature = (capacity, fpr = 0.01, seed = None))]
    fn new(capacity: Unsigned<u64>, fpr: f64, seed: Option<Unsigned<u128>>) -> PyResult<Self> {
        let capacity = capacity.0;
        let inner = match seed.map(|s| s.0) {
            Some(s) => blockbloom::CountingBloomFilter::with_seed(capacity, fpr, s),
            None => blockbloom::CountingBloomFilter::with_capacity(capacity, fpr),
        }
        .map_err(err)?;
        Ok(CountingBloomFilter { inner })
    }
    /// Inserts `key` if it is absent; `True` if this call inserted it. Keys are `str` or
    /// `bytes` (anything else: `TypeError`).
    fn insert_if_absent(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.insert_if_absent(&k))
    }
    /// Inserts `key` once more (its counters go up by one; `remove` takes one insertion
    /// back). Keys are `str` or `bytes` (anything else: `TypeError`).
    fn add(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        with_key(key, |k| self.inner.insert(&k))
    }
    /// Removes one insertion of `key`; `False` if it was not present (nothing changed).
    fn remove(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.remove(&k))
    }
    /// `key in f`: `False` if `key` is certainly not in the filter; `True` if it is, or,
    /// with probability about `target_fpr`, if it is not. Keys are `str` or `bytes`
    /// (anything else: `TypeError`).
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        with_key(key, |k| self.inner.contains(&k))
    }
    /// An upper bound on how many times `key` is present (inserts minus removes): the
    /// smallest of its counters, 0 if it is absent, 15 meaning "15 or more".
    fn estimated_count(&self, key: &Bound<'_, PyAny>) -> PyResult<u8> {
        with_key(key, |k| self.inner.estimated_count(&k))
    }
    /// The number of distinct keys the filter was sized for.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    /// The false-positive rate the filter was sized for, reached at `capacity` keys.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }
    /// Bytes of memory the counters take.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// An estimate of the number of distinct keys present, from the counters in use.
    fn estimated_len(&self) -> u64 {
        self.inner.estimated_len()
    }
    fn __repr__(&self) -> String {
        format!(
            "CountingBloomFilter(capacity={}, fpr={}, memory_bytes={})",
            self.inner.capacity(),
            self.inner.target_fpr(),
            self.inner.memory_bytes()
        )
    }
}

/// A lock-free set of the integers in `range(universe)`, one bit each (exact, no false
/// positives): for ids that are already small integers.
///
/// A number outside `range(universe)` given to `insert` or `remove` raises `ValueError`.
///
/// >>> s = AtomicBitSet(1000)
/// >>> s.insert(7), s.insert(7), 7 in s, len(s)
/// (True, False, True, 1)
#[pyclass(frozen, module = "blockbloom")]
struct AtomicBitSet {
    inner: blockbloom::AtomicBitSet,
}

impl AtomicBitSet {
    fn check(&self, i: u64) -> PyResult<u64> {
        if i < self.inner.universe() {
            Ok(i)
        } else {
            Err(PyValueError::new_err(format!(
                "{i} is outside the universe 0..{}",
                self.inner.universe()
            )))
        }
    }
}

#[pymethods]
impl AtomicBitSet {
    #[new]
    fn new(universe: Unsigned<u64>) -> PyResult<Self> {
        Ok(AtomicBitSet {
            inner: blockbloom::AtomicBitSet::new(universe.0).map_err(err)?,
        })
    }
    /// The set saved at `path` by `save`. `OSError` if the file cannot be read;
    /// `SnapshotError` if it is not a saved set or is damaged.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(AtomicBitSet {
            inner: blockbloom::AtomicBitSet::load(&path).map_err(err)?,
        })
    }
    /// Writes the set to `path` atomically (the previous file or the complete new one,
    /// whatever happens). `OSError` on failure.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(err)
    }
    /// Adds `i`; `True` if it was absent.
    fn insert(&self, i: Unsigned<u64>) -> PyResult<bool> {
        Ok(self.inner.insert(self.check(i.0)?))
    }
    /// Removes `i`; `True` if it was present.
    fn remove(&self, i: Unsigned<u64>) -> PyResult<bool> {
        Ok(self.inner.remove(self.check(i.0)?))
    }
    /// Like `range`'s: anything that is not an id in the universe (a negative number, a
    /// string) is simply not in the set.
    fn __contains__(&self, i: &Bound<'_, PyAny>) -> bool {
        i.extract::<u64>()
            .is_ok_and(|i| i < self.inner.universe() && self.inner.contains(i))
    }
    /// How many integers are in the set.
    fn __len__(&self) -> usize {
        self.inner.len() as usize
    }
    /// The integers in the set, in increasing order.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let v: Vec<u64> = self.inner.iter().collect();
        Ok(PyList::new(py, v)?.try_iter()?.into_any().unbind())
    }
    /// The size of the universe: the set holds integers in `range(universe)`.
    #[getter]
    fn universe(&self) -> u64 {
        self.inner.universe()
    }
    fn __repr__(&self) -> String {
        format!(
            "AtomicBitSet(universe={}, len={})",
            self.inner.universe(),
            self.inner.len()
        )
    }
    /// Bytes of memory the set takes (one bit per integer of the universe).
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
}

/// Where a Redis filter's calls go: straight to Redis, or through an in-process front.
#[allow(clippy::large_enum_variant)] // one per Python object
enum Remote {
    Direct(blockbloom_redis::RedisBloomFilter),
    Front(blockbloom_redis::LocalFront),
}

/// A Bloom filter in Redis shared by many processes, on the Rust Redis client (no redis-py
/// needed): of all the processes offering the same new key, exactly one gets `True`.
///
/// Opens filter `name` at `url` (`redis://`, `rediss://` for TLS, `redis+unix://`),
/// creating it for `capacity` keys at rate `fpr` if it does not exist (an existing one with
/// another capacity or rate is a `RedisError`). `local_front` (a capacity): an in-process
/// filter at rate `local_fpr` answers this process's own repeats without a round trip.
/// `allow_eviction`: accept a server whose `maxmemory-policy` may evict the filter's keys
/// (refused otherwise; an evicted shard is then `StateLost`). `timeout`: seconds to
/// connect, and to wait for each reply, before a call fails with `RedisError`. `cluster`:
/// `url` is a node of a Redis Cluster, over whose nodes the shards are spread;
/// `shard_bytes` (default 64 MiB) makes a new filter of more, smaller shards; an existing
/// one keeps its own (naming another is a `RedisError`). `ValueError` for bad parameters,
/// `RedisError` if the server cannot be reached or refuses.
///
/// One connection per object, so threads sharing an object take turns (give each thread its
/// own to overlap round trips). A process forked after the connection was opened opens its
/// own on its first call; pickled, the object is its constructor's arguments (unpickling
/// connects again).
///
/// >>> seen = RedisBloomFilter("redis://127.0.0.1/", "crawl:seen", 10_000_000)  # doctest: +SKIP
/// >>> seen.insert_if_absent("https://example.com/")  # doctest: +SKIP
/// True
#[pyclass(frozen, module = "blockbloom")]
struct RedisBloomFilter {
    /// Locked with the GIL released (the holder may be waiting on Redis without the GIL).
    remote: Mutex<Remote>,
    /// The constructor's arguments, for pickling.
    args: RedisArgs,
}

#[derive(Clone)]
struct RedisArgs {
    url: String,
    name: String,
    capacity: u64,
    fpr: f64,
    local_front: Option<u64>,
    local_fpr: f64,
    allow_eviction: bool,
    timeout: f64,
    cluster: bool,
    shard_bytes: Option<u64>,
}

impl RedisBloomFilter {
    /// The connection; call it with the GIL released (see `remote`).
    fn lock(&self) -> std::sync::MutexGuard<'_, Remote> {
        self.remote.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connects as `args` say (`open` finishes the builder: open or create, or export),
    /// with the GIL released, and puts the local front in front if asked.
    fn connect(
        py: Python<'_>,
        args: RedisArgs,
        open: impl FnOnce(
                blockbloom_redis::RedisBuilder,
            ) -> blockbloom_redis::Result<blockbloom_redis::RedisBloomFilter>
            + Send,
    ) -> PyResult<Self> {
        let timeout = args.timeout;
        let io = std::time::Duration::try_from_secs_f64(timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "timeout must be a number of seconds > 0, not {timeout}"
                ))
            })?;
        let f = py
            .detach(|| {
                let mut b = blockbloom_redis::RedisBloomFilter::builder(&args.url, &args.name)
                    .capacity(args.capacity)
                    .fpr(args.fpr)
                    .allow_eviction(args.allow_eviction)
                    .timeout(io);
                if args.cluster {
                    b = b.cluster();
                }
                if let Some(bytes) = args.shard_bytes {
                    b = b.shard_bytes(bytes);
                }
                open(b)
            })
            .map_err(redis_err)?;
        let remote = match args.local_front {
            Some(c) => Remote::Front(f.with_local_front(c, args.local_fpr).map_err(redis_err)?),
            None => Remote::Direct(f),
        };
        Ok(RedisBloomFilter {
            remote: Mutex::new(remote),
            args,
        })
    }
}

#[pymethods]
impl RedisBloomFilter {
    // The parameters are documented on the class, which is where Python shows them.
    #[new]
    #[pyo3(signature = (url, name, capacity, fpr = 0.01, local_front = None, local_fpr = 0.001, allow_eviction = false, timeout = 5.0, cluster = false, shard_bytes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: String,
        name: String,
        capacity: Unsigned<u64>,
        fpr: f64,
        local_front: Option<Unsigned<u64>>,
        local_fpr: f64,
        allow_eviction: bool,
        timeout: f64,
        cluster: bool,
        shard_bytes: Option<Unsigned<u64>>,
    ) -> PyResult<Self> {
        let args = RedisArgs {
            url,
            name,
            capacity: capacity.0,
            fpr,
            local_front: local_front.map(|c| c.0),
            local_fpr,
            allow_eviction,
            timeout,
            cluster,
            shard_bytes: shard_bytes.map(|b| b.0),
        };
        RedisBloomFilter::connect(py, args, |b| b.open_or_create())
    }

    /// A filter in Redis with the parameters and seed of `local` (a `BloomFilter` with
    /// 512-bit blocks), created if absent, with `local`'s keys added: the way back from a
    /// `to_local()` backup, or to share a filter built alone. An existing filter `name`
    /// must have the same parameters and seed (`RedisError` otherwise); its keys stay.
    #[staticmethod]
    #[pyo3(signature = (url, name, local, timeout = 5.0, cluster = false, shard_bytes = None))]
    fn export(
        py: Python<'_>,
        url: String,
        name: String,
        local: &BloomFilter,
        timeout: f64,
        cluster: bool,
        shard_bytes: Option<Unsigned<u64>>,
    ) -> PyResult<Self> {
        let args = RedisArgs {
            url,
            name,
            capacity: local.inner.capacity(),
            fpr: local.inner.target_fpr(),
            local_front: None,
            local_fpr: 0.001,
            allow_eviction: false,
            timeout,
            cluster,
            shard_bytes: shard_bytes.map(|b| b.0),
        };
        RedisBloomFilter::connect(py, args, |b| b.export(&local.inner))
    }

    /// A copy of the filter as it is now, in memory, with its parameters and seed: `save`
    /// it for a backup, `RedisBloomFilter.export` it back. `StateLost` if a shard was lost
    /// (the copy would miss its keys; the filter is re-armed, and copying again gives what
    /// it holds now).
    fn to_local(&self, py: Python<'_>) -> PyResult<BloomFilter> {
        let inner = py
            .detach(|| match &mut *self.lock() {
                Remote::Direct(f) => f.to_local(),
                Remote::Front(f) => f.remote().to_local(),
            })
            .map_err(redis_err)?;
        Ok(BloomFilter { inner, path: None })
    }

    /// Adds the keys of `local`, a `BloomFilter` with this filter's parameters and seed (a
    /// `to_local()` copy, or one made with them): each shard one atomic `BITOP OR`, so
    /// merging filters built apart. `RedisError` if the parameters or seed differ.
    fn union_from(&self, py: Python<'_>, local: &BloomFilter) -> PyResult<()> {
        py.detach(|| match &mut *self.lock() {
            Remote::Direct(f) => f.union_from(&local.inner),
            Remote::Front(f) => f.remote().union_from(&local.inner),
        })
        .map_err(redis_err)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let a = slf.get().args.clone();
        let args = (
            a.url,
            a.name,
            a.capacity,
            a.fpr,
            a.local_front,
            a.local_fpr,
            a.allow_eviction,
            a.timeout,
            a.cluster,
            a.shard_bytes,
        )
            .into_pyobject(py)?;
        Ok((py.get_type::<RedisBloomFilter>().into_any(), args))
    }

    /// Inserts `key` in the shared filter; `True` if it was absent. Of every process
    /// offering the same new key at once, exactly one gets `True`. `RedisError` if Redis
    /// cannot answer (`StateLost` if the filter's state was lost: re-send the key). Keys
    /// are `str` or `bytes` (anything else: `TypeError`).
    fn insert_if_absent(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let tuple = PyTuple::new(py, [key])?;
        let ks = tuple_keys(&tuple)?;
        let k = &ks[0];
        py.detach(|| match &mut *self.lock() {
            Remote::Direct(f) => f.insert_if_absent(&k),
            Remote::Front(f) => f.insert_if_absent(&k),
        })
        .map_err(redis_err)
    }

    /// `insert_if_absent` for every key of `keys`, in one round trip (a server-side call per
    /// shard the batch touches, pipelined). Every key is read first: a bad key raises
    /// `TypeError` and nothing is sent. After a `RedisError` the batch may or may not have
    /// been applied; `StateLost`: the filter's state was lost, re-send the batch.
    fn insert_if_absent_many(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<bool>> {
        let tuple = key_tuple(keys)?;
        let ks = tuple_keys(&tuple)?;
        py.detach(|| match &mut *self.lock() {
            Remote::Direct(f) => f.insert_if_absent_many(&ks),
            Remote::Front(f) => f.insert_if_absent_many(&ks),
        })
        .map_err(redis_err)
    }

    /// `key in f`, asked of Redis (or answered by the local front for this process's own
    /// keys). `RedisError` if Redis cannot answer. Keys are `str` or `bytes` (anything
    /// else: `TypeError`).
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let tuple = PyTuple::new(py, [key])?;
        let ks = tuple_keys(&tuple)?;
        let k = &ks[0];
        py.detach(|| match &mut *self.lock() {
            Remote::Direct(f) => f.contains(&k),
            Remote::Front(f) => f.contains(&k),
        })
        .map_err(redis_err)
    }

    /// `[key in f for key in keys]`, in one round trip.
    fn contains_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let tuple = key_tuple(keys)?;
        let ks = tuple_keys(&tuple)?;
        py.detach(|| match &mut *self.lock() {
            Remote::Direct(f) => f.contains_many(&ks),
            Remote::Front(f) => f.remote().contains_many(&ks),
        })
        .map_err(redis_err)
    }

    /// Deletes filter `name` (its parameters and shards, on every node of a cluster);
    /// whether it existed.
    #[staticmethod]
    #[pyo3(signature = (url, name, cluster = false))]
    fn delete(py: Python<'_>, url: String, name: String, cluster: bool) -> PyResult<bool> {
        py.detach(|| {
            let b = blockbloom_redis::RedisBloomFilter::builder(&url, &name);
            if cluster { b.cluster() } else { b }.delete()
        })
        .map_err(redis_err)
    }

    /// Waits until `replicas` replicas have acknowledged every write this object sent
    /// (Redis `WAIT`), for at most `timeout` seconds; returns how many did. Keys inserted
    /// before the call, when it returns `replicas`, survive a failover to one of them.
    #[pyo3(signature = (replicas, timeout = 1.0))]
    fn wait_for_replicas(
        &self,
        py: Python<'_>,
        replicas: Unsigned<u64>,
        timeout: f64,
    ) -> PyResult<u64> {
        let timeout = std::time::Duration::try_from_secs_f64(timeout).map_err(|_| {
            PyValueError::new_err(format!(
                "timeout must be a number of seconds >= 0, not {timeout}"
            ))
        })?;
        py.detach(|| match &mut *self.lock() {
            Remote::Direct(f) => f.wait_for_replicas(replicas.0, timeout),
            Remote::Front(f) => f.remote().wait_for_replicas(replicas.0, timeout),
        })
        .map_err(redis_err)
    }

    /// The filter's name, capacity and rate; not the URL, which may hold a password.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let a = &self.args;
        Ok(format!(
            "RedisBloomFilter(name={}, capacity={}, fpr={})",
            PyString::new(py, &a.name).repr()?,
            a.capacity,
            a.fpr
        ))
    }

    /// Calls that went to Redis (with a local front), else `None`.
    #[getter]
    fn round_trips(&self, py: Python<'_>) -> Option<u64> {
        py.detach(|| match &*self.lock() {
            Remote::Direct(_) => None,
            Remote::Front(f) => Some(f.round_trips()),
        })
    }
}

#[pymodule]
fn _blockbloom(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BloomFilter>()?;
    m.add_class::<GrowableBloomFilter>()?;
    m.add_class::<CountingBloomFilter>()?;
    m.add_class::<AtomicBitSet>()?;
    m.add_class::<RedisBloomFilter>()?;
    m.add("SnapshotError", m.py().get_type::<SnapshotError>())?;
    m.add("RedisError", m.py().get_type::<RedisError>())?;
    m.add("StateLost", m.py().get_type::<StateLost>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
