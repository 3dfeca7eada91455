//! `RedisExpiringBloomFilter`: an expiring filter in Redis shared by a fleet: the server
//! module's expiring type where every primary has it, else generations the server frees.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::expiring::{duration, time};
use crate::redis::{wait_timeout, RedisArgs};
use crate::*;

/// An `ExpiringBloomFilter` in Redis shared by many processes: a key is seen for
/// `expire_after` seconds after the insert that added it; of all the processes offering the
/// same new key, at most one gets `True`, also across a change of epoch and with clocks up
/// to a second apart. Created where every primary has the blockbloom module loaded (and
/// `use_module` is true), it is the module's expiring type (`uses_module`): the local
/// filter's planes in its shards, with the answers of an `ExpiringBloomFilter` of the same
/// seed, about 2.8 bytes per key of capacity at 1%, new again at most a third of
/// (`expire_after` + 1 s) later. Elsewhere it keeps generations through the Redis Functions
/// (quarter windows, new again at most 25% later), Redis keys with an expiry time that the
/// server frees itself.
///
/// Opens filter `name` at `url`, creating it for `capacity` distinct keys per window at
/// rate `fpr` if it does not exist; an existing one with another capacity, rate or window
/// is a `RedisError`, and so is a plain `RedisBloomFilter` of that name. `expire_after` is
/// seconds (at least 1) or a `datetime.timedelta`. `allow_eviction`, `timeout`, `cluster`,
/// `shard_bytes` and `use_module` as for `RedisBloomFilter` (a server that may evict keys, `allkeys-*` or
/// `volatile-*`, is refused without `allow_eviction`). There is no local front: a process's
/// own memory of a key would outlive the shared window. The optional `at` of the key
/// methods is the time of the call in seconds since 1970 (`time.time()`, the default).
///
/// >>> seen = RedisExpiringBloomFilter("redis://127.0.0.1/", "crawl:fetched", 10_000_000, expire_after=30 * 86400)  # doctest: +SKIP
/// >>> seen.insert_if_absent("https://example.com/")  # doctest: +SKIP
/// True
/// >>> seen.insert_if_absent("https://example.com/", at=time.time() + 38 * 86400)  # doctest: +SKIP
/// True
#[pyclass(frozen, module = "blockbloom")]
pub(crate) struct RedisExpiringBloomFilter {
    /// Locked with the GIL released (the holder may be waiting on Redis without the GIL).
    remote: Mutex<blockbloom_redis::RedisExpiringBloomFilter>,
    /// The constructor's arguments, for pickling (`local_front` unused).
    args: RedisArgs,
    expire_after: f64,
    /// What its capacity is sized for, as `arrival` names it.
    arrival: &'static str,
    /// Whether it is the server module's expiring type.
    uses_module: bool,
    /// The filter's own capacity and rate, as the server's record of it says (read without
    /// the connection's lock, which a call waiting on Redis may hold).
    capacity: u64,
    target_fpr: f64,
}

impl RedisExpiringBloomFilter {
    /// The connection; call it with the GIL released (see `remote`).
    fn lock(&self) -> std::sync::MutexGuard<'_, blockbloom_redis::RedisExpiringBloomFilter> {
        self.remote.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `op` on the keys of `keys` (an iterable) at `at`, with the GIL released.
    fn batch<T: Send>(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        op: impl FnOnce(
                &mut blockbloom_redis::RedisExpiringBloomFilter,
                &[Key<'_>],
            ) -> blockbloom_redis::Result<T>
            + Send,
    ) -> PyResult<T> {
        let tuple = key_tuple(keys)?;
        let ks = tuple_keys(&tuple)?;
        py.detach(|| op(&mut self.lock(), &ks)).map_err(redis_err)
    }

    /// `op` on one key, as a batch of one.
    fn one<T: Send>(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        op: impl FnOnce(
                &mut blockbloom_redis::RedisExpiringBloomFilter,
                &[Key<'_>],
            ) -> blockbloom_redis::Result<Vec<T>>
            + Send,
    ) -> PyResult<T> {
        let tuple = PyTuple::new(py, [key])?;
        let ks = tuple_keys(&tuple)?;
        let mut answers = py.detach(|| op(&mut self.lock(), &ks)).map_err(redis_err)?;
        Ok(answers.remove(0))
    }
}

#[pymethods]
impl RedisExpiringBloomFilter {
    // The parameters are documented on the class, which is where Python shows them.
    #[new]
    #[pyo3(
        signature = (url, name, capacity, fpr = 0.01, *, expire_after, allow_eviction = false, timeout = 5.0, cluster = false, shard_bytes = None, arrival = "steady", use_module = true),
        text_signature = "(url, name, capacity, fpr=0.01, *, expire_after, allow_eviction=False, timeout=5.0, cluster=False, shard_bytes=None, arrival='steady', use_module=True)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: String,
        name: String,
        capacity: Unsigned<u64>,
        fpr: f64,
        expire_after: &Bound<'_, PyAny>,
        allow_eviction: bool,
        timeout: f64,
        cluster: bool,
        shard_bytes: Option<Unsigned<u64>>,
        arrival: &str,
        use_module: bool,
    ) -> PyResult<Self> {
        let window = duration(expire_after)?;
        let arrival = crate::expiring::arrival(arrival)?;
        let args = RedisArgs {
            url,
            name,
            capacity: capacity.0,
            fpr,
            local_front: None,
            local_fpr: 0.001,
            allow_eviction,
            timeout,
            cluster,
            shard_bytes: shard_bytes.map(|b| b.0),
            use_module,
        };
        let f = args.open(py, |b| {
            b.expire_after(window)
                .arrival(arrival)
                .open_or_create_expiring()
        })?;
        Ok(RedisExpiringBloomFilter {
            expire_after: f.expire_after().as_secs_f64(),
            arrival: crate::expiring::arrival_name(f.arrival()),
            uses_module: f.uses_module(),
            capacity: f.capacity(),
            target_fpr: f.target_fpr(),
            remote: Mutex::new(f),
            args,
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let py = slf.py();
        let me = slf.get();
        let a = me.args.clone();
        // Keyword-only `expire_after`: rebuilt through `functools.partial`.
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("expire_after", me.expire_after)?;
        kwargs.set_item("allow_eviction", a.allow_eviction)?;
        kwargs.set_item("timeout", a.timeout)?;
        kwargs.set_item("cluster", a.cluster)?;
        kwargs.set_item("shard_bytes", a.shard_bytes)?;
        kwargs.set_item("arrival", me.arrival)?;
        kwargs.set_item("use_module", a.use_module)?;
        let partial = py.import("functools")?.getattr("partial")?;
        let make = partial.call((py.get_type::<RedisExpiringBloomFilter>(),), Some(&kwargs))?;
        let args = (a.url, a.name, a.capacity, a.fpr).into_pyobject(py)?;
        Ok((make, args.into_any()))
    }

    /// Inserts `key` at `at` (default now) if no process inserted it within the window:
    /// `True` (fetch it) or `False`. Of every process offering the same new key at once, at
    /// most one gets `True`. `RedisError` if Redis cannot answer (`StateLost` if the
    /// filter's state was lost: re-send the key). Keys are `str` or `bytes`.
    #[pyo3(signature = (key, at = None))]
    fn insert_if_absent(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        at: Option<f64>,
    ) -> PyResult<bool> {
        let t = time(at)?;
        self.one(py, key, |f, ks| f.insert_if_absent_many_at(ks, t))
    }

    /// `insert_if_absent` for every key of `keys`, all at `at`, in one round trip (a
    /// server-side call per shard the batch touches, pipelined). Every key is read first:
    /// a bad key raises `TypeError` and nothing is sent.
    #[pyo3(signature = (keys, at = None))]
    fn insert_if_absent_many(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        at: Option<f64>,
    ) -> PyResult<Vec<bool>> {
        let t = time(at)?;
        self.batch(py, keys, |f, ks| f.insert_if_absent_many_at(ks, t))
    }

    /// Whether any process inserted `key` within the window before `at` (default now).
    #[pyo3(signature = (key, at = None))]
    fn contains(&self, py: Python<'_>, key: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<bool> {
        let t = time(at)?;
        self.one(py, key, |f, ks| f.contains_many_at(ks, t))
    }

    /// `key in f`: `contains(key)` now.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.contains(py, key, None)
    }

    /// `[f.contains(key, at) for key in keys]`, in one round trip.
    #[pyo3(signature = (keys, at = None))]
    fn contains_many(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        at: Option<f64>,
    ) -> PyResult<Vec<bool>> {
        let t = time(at)?;
        self.batch(py, keys, |f, ks| f.contains_many_at(ks, t))
    }

    /// Inserts `key` at `at` (default now): it is seen for the window from then on, also
    /// if it was present (an insert renews the window), like `set.add`.
    #[pyo3(signature = (key, at = None))]
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<()> {
        let t = time(at)?;
        let one = PyTuple::new(py, [key])?;
        self.batch(py, one.as_any(), |f, ks| f.insert_many_at(ks, t))
    }

    /// Inserts every key of `keys` at `at` (default now), in one round trip: each is seen
    /// for the window from then on, also if it was present (an insert renews the window).
    #[pyo3(signature = (keys, at = None))]
    fn update(&self, py: Python<'_>, keys: &Bound<'_, PyAny>, at: Option<f64>) -> PyResult<()> {
        let t = time(at)?;
        self.batch(py, keys, |f, ks| f.insert_many_at(ks, t))
    }

    /// Deletes filter `name` (its parameters, shards and generations, on every node of a
    /// cluster); whether it existed.
    #[staticmethod]
    #[pyo3(signature = (url, name, cluster = false))]
    fn delete(py: Python<'_>, url: String, name: String, cluster: bool) -> PyResult<bool> {
        RedisBloomFilter::delete(py, url, name, cluster)
    }

    /// Waits until `replicas` replicas have acknowledged every write this object sent
    /// (Redis `WAIT`), for at most `timeout` seconds; returns how many did.
    #[pyo3(signature = (replicas, timeout = 1.0))]
    fn wait_for_replicas(
        &self,
        py: Python<'_>,
        replicas: Unsigned<u64>,
        timeout: f64,
    ) -> PyResult<u64> {
        let timeout = wait_timeout(timeout)?;
        py.detach(|| self.lock().wait_for_replicas(replicas.0, timeout))
            .map_err(redis_err)
    }

    /// The names of the generations that exist now (Redis keys with an expiry time).
    fn generation_keys(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.detach(|| self.lock().generation_keys())
            .map_err(redis_err)
    }

    /// The window, in seconds.
    #[getter]
    fn expire_after(&self) -> f64 {
        self.expire_after
    }
    /// Distinct keys per window the filter was sized for (the filter's own, for one that
    /// existed).
    /// Whether it is the server module's expiring type (the local filter's planes, kept in
    /// place by `BB.SHARD.X*`), else generations through the Redis Functions.
    #[getter]
    fn uses_module(&self) -> bool {
        self.uses_module
    }

    /// The filter's name in Redis.
    #[getter]
    fn name(&self) -> &str {
        &self.args.name
    }
    /// Distinct keys per window the filter was sized for.
    #[getter]
    fn capacity(&self) -> u64 {
        self.capacity
    }
    /// The false-positive rate it was sized for.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
    /// What `capacity` was sized for: `"steady"` or `"worst_burst"` (the filter's own, for
    /// one that existed).
    #[getter]
    fn arrival(&self) -> &'static str {
        self.arrival
    }

    /// Seconds after its insert by which a key is certainly forgotten: 4/3 of
    /// (`expire_after` + 1 s) as the server module's type, 5/4 of `expire_after` through the
    /// Functions.
    #[getter]
    fn forgotten_after(&self, py: Python<'_>) -> f64 {
        py.detach(|| self.lock().window().forgotten_after().as_secs_f64())
    }

    /// Estimated number of distinct keys inserted within the window (the last four to five
    /// epochs), from the live generations (each is read). `RedisError` if Redis cannot
    /// answer.
    fn estimated_len(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.lock().estimated_len()).map_err(redis_err)
    }

    /// The false-positive rate at `at` (default now), from the generations live then.
    #[pyo3(signature = (at = None))]
    fn estimated_fpr(&self, py: Python<'_>, at: Option<f64>) -> PyResult<f64> {
        let t = time(at)?;
        py.detach(|| self.lock().estimated_fpr_at(t))
            .map_err(redis_err)
    }

    /// The expected number of new keys taken for repeats while the keys remembered now were
    /// inserted (by every process).
    fn estimated_false_positives(&self, py: Python<'_>) -> PyResult<f64> {
        py.detach(|| self.lock().estimated_false_positives())
            .map_err(redis_err)
    }

    /// The filter's name, capacity, rate and window; not the URL, which may hold a
    /// password.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let a = &self.args;
        Ok(format!(
            "RedisExpiringBloomFilter(name={}, capacity={}, fpr={}, expire_after={})",
            PyString::new(py, &a.name).repr()?,
            a.capacity,
            a.fpr,
            self.expire_after
        ))
    }
}
