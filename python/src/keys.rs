//! Keys from Python (`str` or `bytes`, hashed like a Rust `str`), batches of them read
//! with the GIL held, and the answers of a batch as a Python list.

use blockbloom::KeyHash;
use pyo3::exceptions::{PyOSError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

/// A key's bytes, hashed like a Rust `str` with those bytes (bytes, then 0xff).
pub(crate) use blockbloom::StrBytes as Key;

/// The bytes of a `str` (its UTF-8) or `bytes` key, borrowed from the object. The common
/// case, an exact `str`, costs one call into the stable ABI (`PyUnicode_AsUTF8AndSize`) and
/// a type test that calls nothing; subclasses of `str` and `bytes` go through PyO3's checks.
#[inline(always)]
pub(crate) fn key_bytes<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
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
pub(crate) fn other_key_bytes<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
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
pub(crate) fn with_key<T>(obj: &Bound<'_, PyAny>, f: impl FnOnce(Key<'_>) -> T) -> PyResult<T> {
    Ok(f(Key(key_bytes(obj)?)))
}

/// The keys of an iterable as a tuple (it holds a strong reference to every key, and no
/// other thread can change it, so the keys' bytes stay valid while the GIL is released).
pub(crate) fn key_tuple<'py>(keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    if let Ok(t) = keys.cast::<PyTuple>() {
        return Ok(t.clone());
    }
    if let Ok(l) = keys.cast::<PyList>() {
        return Ok(l.to_tuple());
    }
    PyTuple::new(keys.py(), keys.try_iter()?.collect::<PyResult<Vec<_>>>()?)
}

/// The bytes of every key of `tuple`, read in place.
pub(crate) fn tuple_keys<'a>(tuple: &'a Bound<'_, PyTuple>) -> PyResult<Vec<Key<'a>>> {
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
pub(crate) fn key_hashes(
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
pub(crate) fn answer_list<'py>(py: Python<'py>, answers: &[bool]) -> PyResult<Bound<'py, PyList>> {
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

/// A batch with one answer per key, for every hashing filter class (`insert_if_absent_many`
/// and `contains_many`, written once over the family's
/// [`HashedFilter`](blockbloom::HashedFilter)): hashes `keys` with the GIL held
/// ([`key_hashes`]; a bad key raises `TypeError` before any is used), runs `probe` (a hashed
/// form, e.g. `HashedFilter::insert_if_absent_hashes`) with it released, and returns the
/// answers as a list. The hashes are freed before the list is made, which then reuses their
/// memory: each is 8 MB for 10^6 keys, and fresh pages cost a fault each (42 -> 31 ms a
/// batch of 10^6 URLs in one run, 4,700 -> 600 faults).
pub(crate) fn answered_batch<'py, F: blockbloom::HashedFilter>(
    f: &F,
    keys: &Bound<'py, PyAny>,
    probe: fn(&F, &[KeyHash], &mut [bool]),
) -> PyResult<Bound<'py, PyList>> {
    let py = keys.py();
    let hs = key_hashes(keys, |k| f.key_hash(k))?;
    let out = py.detach(|| {
        let mut out = vec![false; hs.len()];
        probe(f, &hs, &mut out);
        out
    });
    drop(hs);
    answer_list(py, &out)
}

/// An unsigned integer argument (a capacity, a seed, a block size, a bitset id): negative or
/// too large is a `ValueError` like every other bad parameter, where PyO3's conversion raises
/// `OverflowError`, which an `except ValueError` does not catch.
pub(crate) struct Unsigned<T>(pub(crate) T);

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

/// `path` made absolute (symbolic links kept, as the filter resolves them itself), so that
/// a pickled file-backed filter opens the same file in a process with another directory.
pub(crate) fn absolute(path: &std::path::Path) -> PyResult<std::path::PathBuf> {
    std::path::absolute(path).map_err(|e| PyOSError::new_err(e.to_string()))
}

/// `update` (`insert_many`) of every hashing filter class (keys read as in [`answered_batch`]).
pub(crate) fn update(f: &impl blockbloom::HashedFilter, keys: &Bound<'_, PyAny>) -> PyResult<()> {
    let hs = key_hashes(keys, |k| f.key_hash(k))?;
    keys.py().detach(|| f.insert_hashes(&hs));
    Ok(())
}

/// The batch forms for a filter without hashed forms (the counting filter): every key read
/// first (a bad key raises `TypeError` before any is used), then `op` on them with the GIL
/// held, as one list of answers.
pub(crate) fn each_key<'py>(
    keys: &Bound<'py, PyAny>,
    op: impl FnOnce(&[Key<'_>], &mut [bool]),
) -> PyResult<Bound<'py, PyList>> {
    let tuple = key_tuple(keys)?;
    let ks = tuple_keys(&tuple)?;
    let mut out = vec![false; ks.len()];
    op(&ks, &mut out);
    answer_list(keys.py(), &out)
}
