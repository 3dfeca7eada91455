//! `RedisBloomFilter`: one filter in Redis shared by a fleet, with an optional local front.

use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::*;

/// Where a Redis filter's calls go: straight to Redis, or through an in-process front.
pub(crate) type Remote = Box<dyn for<'a> blockbloom_redis::SharedFilter<Key<'a>>>;

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
/// one keeps its own (naming another is a `RedisError`). Batches go through the server
/// module (`blockbloom-redis-module`) where every primary has it loaded (`uses_module`),
/// else through the Redis Functions, on the same shards; `use_module=False` keeps to the
/// Functions. `ValueError` for bad parameters,
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
pub(crate) struct RedisBloomFilter {
    /// Locked with the GIL released (the holder may be waiting on Redis without the GIL).
    remote: Mutex<Remote>,
    /// The constructor's arguments, for pickling.
    args: RedisArgs,
    /// Whether its batches go through the server module.
    uses_module: bool,
    /// The filter's own capacity and rate, as the server's record of it says.
    capacity: u64,
    target_fpr: f64,
}

#[derive(Clone)]
pub(crate) struct RedisArgs {
    pub(crate) url: String,
    pub(crate) name: String,
    pub(crate) capacity: u64,
    pub(crate) fpr: f64,
    pub(crate) local_front: Option<u64>,
    pub(crate) local_fpr: f64,
    pub(crate) allow_eviction: bool,
    pub(crate) timeout: f64,
    pub(crate) cluster: bool,
    pub(crate) shard_bytes: Option<u64>,
    /// Batches may go through the server module where every primary has it.
    pub(crate) use_module: bool,
}

impl RedisArgs {
    /// The builder these arguments describe, finished by `open` with the GIL released
    /// (shared by `RedisBloomFilter` and `RedisExpiringBloomFilter`).
    pub(crate) fn open<F: Send>(
        &self,
        py: Python<'_>,
        open: impl FnOnce(blockbloom_redis::RedisBuilder) -> blockbloom_redis::Result<F> + Send,
    ) -> PyResult<F> {
        let timeout = self.timeout;
        let io = std::time::Duration::try_from_secs_f64(timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "timeout must be a number of seconds > 0, not {timeout}"
                ))
            })?;
        py.detach(|| {
            let mut b = blockbloom_redis::RedisBloomFilter::builder(&self.url, &self.name)
                .capacity(self.capacity)
                .fpr(self.fpr)
                .allow_eviction(self.allow_eviction)
                .timeout(io);
            if self.cluster {
                b = b.cluster();
            }
            if let Some(bytes) = self.shard_bytes {
                b = b.shard_bytes(bytes);
            }
            open(b.use_module(self.use_module))
        })
        .map_err(redis_err)
    }
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
        let f = args.open(py, open)?;
        let (uses_module, capacity, target_fpr) = (f.uses_module(), f.capacity(), f.target_fpr());
        let remote: Remote = match args.local_front {
            Some(c) => Box::new(f.with_local_front(c, args.local_fpr).map_err(redis_err)?),
            None => Box::new(f),
        };
        Ok(RedisBloomFilter {
            remote: Mutex::new(remote),
            args,
            uses_module,
            capacity,
            target_fpr,
        })
    }
}

/// `wait_for_replicas`' `timeout` as a `Duration` (`ValueError` if negative or not a number).
pub(crate) fn wait_timeout(timeout: f64) -> PyResult<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(timeout).map_err(|_| {
        PyValueError::new_err(format!(
            "timeout must be a number of seconds >= 0, not {timeout}"
        ))
    })
}

#[pymethods]
impl RedisBloomFilter {
    // The parameters are documented on the class, which is where Python shows them.
    #[new]
    #[pyo3(signature = (url, name, capacity, fpr = 0.01, local_front = None, local_fpr = 0.001, allow_eviction = false, timeout = 5.0, cluster = false, shard_bytes = None, use_module = true))]
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
        use_module: bool,
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
            use_module,
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
            use_module: true,
        };
        RedisBloomFilter::connect(py, args, |b| b.export(&local.inner))
    }

    /// A copy of the filter as it is now, in memory, with its parameters and seed: `save`
    /// it for a backup, `RedisBloomFilter.export` it back. `StateLost` if a shard was lost
    /// (the copy would miss its keys; the filter is re-armed, and copying again gives what
    /// it holds now).
    fn to_local(&self, py: Python<'_>) -> PyResult<BloomFilter> {
        let inner = py
            .detach(|| self.lock().shared().to_local())
            .map_err(redis_err)?;
        Ok(BloomFilter { inner, path: None })
    }

    /// Adds the keys of `local`, a `BloomFilter` with this filter's parameters and seed (a
    /// `to_local()` copy, or one made with them): each shard one atomic `BITOP OR`, so
    /// merging filters built apart. `RedisError` if the parameters or seed differ.
    fn union_from(&self, py: Python<'_>, local: &BloomFilter) -> PyResult<()> {
        py.detach(|| self.lock().shared().union_from(&local.inner))
            .map_err(redis_err)
    }

    /// Whether this object's batches go through the server module (`BB.SHARD.*` commands)
    /// rather than the Redis Functions: the module is loaded on every primary and
    /// `use_module` was not `False`.
    #[getter]
    fn uses_module(&self) -> bool {
        self.uses_module
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
            a.use_module,
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
        py.detach(|| self.lock().insert_if_absent(k))
            .map_err(redis_err)
    }

    /// Inserts `key` (`insert_if_absent` without the answer), like `set.add`.
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.insert_if_absent(py, key).map(drop)
    }

    /// Inserts every key of `keys` in one round trip, like `set.update`; a bad key raises
    /// `TypeError` and nothing is sent.
    fn update(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        self.insert_if_absent_many(py, keys).map(drop)
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
        py.detach(|| self.lock().insert_if_absent_many(&ks))
            .map_err(redis_err)
    }

    /// `key in f`, asked of Redis (or answered by the local front for this process's own
    /// keys). `RedisError` if Redis cannot answer. Keys are `str` or `bytes` (anything
    /// else: `TypeError`).
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let tuple = PyTuple::new(py, [key])?;
        let ks = tuple_keys(&tuple)?;
        let k = &ks[0];
        py.detach(|| self.lock().contains(k)).map_err(redis_err)
    }

    /// `[key in f for key in keys]`, in one round trip.
    fn contains_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let tuple = key_tuple(keys)?;
        let ks = tuple_keys(&tuple)?;
        py.detach(|| self.lock().contains_many(&ks))
            .map_err(redis_err)
    }

    /// Deletes filter `name` (its parameters and shards, on every node of a cluster);
    /// whether it existed.
    #[staticmethod]
    #[pyo3(signature = (url, name, cluster = false))]
    pub(crate) fn delete(
        py: Python<'_>,
        url: String,
        name: String,
        cluster: bool,
    ) -> PyResult<bool> {
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
        let timeout = wait_timeout(timeout)?;
        py.detach(|| self.lock().shared().wait_for_replicas(replicas.0, timeout))
            .map_err(redis_err)
    }

    /// Estimated number of distinct keys in the shared filter, from its bits set (the
    /// server counts them: one `BITCOUNT` per shard). `RedisError` if Redis cannot answer.
    fn estimated_len(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.lock().shared().estimated_len())
            .map_err(redis_err)
    }

    /// The shared filter's false-positive rate at its current fill.
    fn estimated_fpr(&self, py: Python<'_>) -> PyResult<f64> {
        py.detach(|| self.lock().shared().estimated_fpr())
            .map_err(redis_err)
    }

    /// The expected number of new keys the shared filter has taken for repeats so far
    /// (pages not fetched, by every process), from its fill.
    fn estimated_false_positives(&self, py: Python<'_>) -> PyResult<f64> {
        py.detach(|| self.lock().shared().estimated_false_positives())
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

    /// The filter's name in Redis.
    #[getter]
    fn name(&self) -> &str {
        &self.args.name
    }
    /// The number of distinct keys the filter was sized for.
    #[getter]
    fn capacity(&self) -> u64 {
        self.capacity
    }
    /// The false-positive rate the filter was sized for, reached at `capacity` keys.
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// Calls that went to Redis (with a local front), else `None`.
    #[getter]
    fn round_trips(&self, py: Python<'_>) -> Option<u64> {
        py.detach(|| self.lock().round_trips())
    }
}
