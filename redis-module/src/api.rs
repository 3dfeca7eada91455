//! The few functions of Redis' module API that the module uses, bound by hand (no
//! `bindgen`, so building needs no `clang`), and safe wrappers around them. Every `unsafe`
//! of the crate is here.
//!
//! Redis hands a module its API as a lookup function in the first word of the context passed
//! to `RedisModule_OnLoad` (what `RedisModule_Init` of `redismodule.h` reads): [`Api::load`]
//! asks it for each function by name, and refuses to load where one is missing.

use std::ffi::{c_char, c_int, c_long, c_longlong, c_void, CStr};
use std::ptr::{null_mut, NonNull};
use std::sync::OnceLock;

/// `RedisModuleCtx`: a command's context (opaque).
#[repr(C)]
pub struct RawCtx {
    _private: [u8; 0],
}
/// `RedisModuleString` (opaque).
#[repr(C)]
pub struct RawString {
    _private: [u8; 0],
}
/// `RedisModuleKey` (opaque).
#[repr(C)]
pub struct RawKey {
    _private: [u8; 0],
}
/// `RedisModuleUser` (opaque).
#[repr(C)]
pub struct RawUser {
    _private: [u8; 0],
}

/// A command's entry point: `int cmd(RedisModuleCtx *, RedisModuleString **argv, int argc)`.
pub type CommandFn = extern "C" fn(*mut RawCtx, *mut *mut RawString, c_int) -> c_int;

/// `REDISMODULE_OK`.
pub const OK: c_int = 0;
/// `REDISMODULE_ERR`.
pub const ERR: c_int = 1;
const APIVER_1: c_int = 1;
const READ: c_int = 1;
const WRITE: c_int = 2;
const KEYTYPE_EMPTY: c_int = 0;
const KEYTYPE_STRING: c_int = 1;
const KEYTYPE_HASH: c_int = 3;
const CTX_FLAGS_CLUSTER: c_int = 1 << 5;
const CTX_FLAGS_OOM: c_int = 1 << 10;
const CTX_FLAGS_REPLICATED: c_int = 1 << 12;
const CTX_FLAGS_LOADING: c_int = 1 << 13;
const NOTIFY_GENERIC: c_int = 1 << 2;
const NOTIFY_STRING: c_int = 1 << 3;
/// `REDISMODULE_CMD_KEY_ACCESS` / `_UPDATE`: reading a key's value / changing it.
const KEY_ACCESS: c_int = 1 << 4;
const KEY_UPDATE: c_int = 1 << 5;

macro_rules! api_table {
    ($($field:ident = $name:literal : fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The functions of the module API used, looked up once at load.
        struct Api {
            $($field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            replicate: unsafe extern "C" fn(*mut RawCtx, *const c_char, *const c_char, ...) -> c_int,
            hash_set: unsafe extern "C" fn(*mut RawKey, c_int, ...) -> c_int,
        }

        impl Api {
            /// Looks up every function through `get_api`; `None` if one is missing.
            ///
            /// # Safety
            /// `get_api` is Redis' `RedisModule_GetApi`.
            unsafe fn load(
                get_api: unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int,
            ) -> Option<Api> {
                let find = |name: &CStr| {
                    let mut f: *mut c_void = null_mut();
                    // SAFETY: `get_api` writes the function's address into `f`, or fails.
                    let rc = unsafe { get_api(name.as_ptr(), (&mut f as *mut *mut c_void).cast()) };
                    (rc == OK && !f.is_null()).then_some(f)
                };
                Some(Api {
                    $(
                        // SAFETY: Redis' function of that name has this signature
                        // (redismodule.h).
                        $field: unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(find($name)?) },
                    )*
                    // SAFETY: as above: `RedisModule_Replicate` is variadic in C too.
                    replicate: unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut RawCtx, *const c_char, *const c_char, ...) -> c_int>(find(c"RedisModule_Replicate")?) },
                    // SAFETY: as above: `RedisModule_HashSet` is variadic in C too.
                    hash_set: unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut RawKey, c_int, ...) -> c_int>(find(c"RedisModule_HashSet")?) },
                })
            }
        }
    };
}

api_table! {
    set_module_attribs = c"RedisModule_SetModuleAttribs": fn(*mut RawCtx, *const c_char, c_int, c_int);
    is_module_name_busy = c"RedisModule_IsModuleNameBusy": fn(*const c_char) -> c_int;
    create_command = c"RedisModule_CreateCommand": fn(*mut RawCtx, *const c_char, CommandFn, *const c_char, c_int, c_int, c_int) -> c_int;
    wrong_arity = c"RedisModule_WrongArity": fn(*mut RawCtx) -> c_int;
    reply_with_error = c"RedisModule_ReplyWithError": fn(*mut RawCtx, *const c_char) -> c_int;
    reply_with_string_buffer = c"RedisModule_ReplyWithStringBuffer": fn(*mut RawCtx, *const c_char, usize) -> c_int;
    reply_with_long_long = c"RedisModule_ReplyWithLongLong": fn(*mut RawCtx, c_longlong) -> c_int;
    reply_with_double = c"RedisModule_ReplyWithDouble": fn(*mut RawCtx, f64) -> c_int;
    reply_with_array = c"RedisModule_ReplyWithArray": fn(*mut RawCtx, c_long) -> c_int;
    reply_with_simple_string = c"RedisModule_ReplyWithSimpleString": fn(*mut RawCtx, *const c_char) -> c_int;
    string_ptr_len = c"RedisModule_StringPtrLen": fn(*const RawString, *mut usize) -> *const c_char;
    create_string = c"RedisModule_CreateString": fn(*mut RawCtx, *const c_char, usize) -> *mut RawString;
    free_string = c"RedisModule_FreeString": fn(*mut RawCtx, *mut RawString);
    open_key = c"RedisModule_OpenKey": fn(*mut RawCtx, *mut RawString, c_int) -> *mut RawKey;
    close_key = c"RedisModule_CloseKey": fn(*mut RawKey);
    key_type = c"RedisModule_KeyType": fn(*mut RawKey) -> c_int;
    string_dma = c"RedisModule_StringDMA": fn(*mut RawKey, *mut usize, c_int) -> *mut c_char;
    string_truncate = c"RedisModule_StringTruncate": fn(*mut RawKey, usize) -> c_int;
    notify_keyspace_event = c"RedisModule_NotifyKeyspaceEvent": fn(*mut RawCtx, c_int, *const c_char, *mut RawString) -> c_int;
    get_context_flags = c"RedisModule_GetContextFlags": fn(*mut RawCtx) -> c_int;
    get_current_user_name = c"RedisModule_GetCurrentUserName": fn(*mut RawCtx) -> *mut RawString;
    get_module_user_from_user_name = c"RedisModule_GetModuleUserFromUserName": fn(*mut RawString) -> *mut RawUser;
    acl_check_key_permissions = c"RedisModule_ACLCheckKeyPermissions": fn(*mut RawUser, *mut RawString, c_int) -> c_int;
    free_module_user = c"RedisModule_FreeModuleUser": fn(*mut RawUser);
    replicate_verbatim = c"RedisModule_ReplicateVerbatim": fn(*mut RawCtx) -> c_int;
}

static API: OnceLock<Api> = OnceLock::new();

fn api() -> &'static Api {
    API.get()
        .expect("commands run only after a successful load")
}

/// What `RedisModule_OnLoad` does first (as `RedisModule_Init`): finds the API, names the
/// module, and registers `commands` (name, entry point, flags, first key, last key, key
/// step). `Err` with the reason if any of it fails.
///
/// # Safety
/// `ctx` is the context Redis passed to `RedisModule_OnLoad`.
pub unsafe fn init(
    ctx: *mut RawCtx,
    name: &CStr,
    version: c_int,
    commands: &[(&CStr, CommandFn, &CStr, c_int, c_int, c_int)],
) -> Result<(), String> {
    // SAFETY: the first word of the load context is `RedisModule_GetApi` (redismodule.h,
    // `RedisModule_Init`).
    let get_api = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int>(
            *(ctx as *mut *mut c_void),
        )
    };
    // SAFETY: `get_api` is Redis' lookup function.
    let Some(found) = (unsafe { Api::load(get_api) }) else {
        return Err(
            "this Redis lacks a module API function the module needs (Redis 7.0 or later is)"
                .into(),
        );
    };
    let a = API.get_or_init(|| found);
    // SAFETY: `name` is a valid C string; `ctx` is the load context.
    unsafe {
        if (a.is_module_name_busy)(name.as_ptr()) != 0 {
            return Err("a module of this name is loaded already".into());
        }
        (a.set_module_attribs)(ctx, name.as_ptr(), version, APIVER_1);
    }
    for &(cmd, f, flags, first, last, step) in commands {
        // SAFETY: C strings and an `extern "C"` entry point with the command signature.
        if unsafe { (a.create_command)(ctx, cmd.as_ptr(), f, flags.as_ptr(), first, last, step) }
            != OK
        {
            return Err(format!("could not register {cmd:?}"));
        }
    }
    Ok(())
}

/// A command's context and arguments, valid for the call.
pub struct Ctx<'a> {
    raw: *mut RawCtx,
    args: &'a [*mut RawString],
}

impl<'a> Ctx<'a> {
    /// The context of a command call.
    ///
    /// # Safety
    /// `raw`, `argv` and `argc` are what Redis passed to the command.
    pub unsafe fn new(raw: *mut RawCtx, argv: *mut *mut RawString, argc: c_int) -> Ctx<'a> {
        // SAFETY: Redis passes `argc` valid strings in `argv`, alive for the call.
        let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
        Ctx { raw, args }
    }

    /// Number of arguments, the command's name included.
    pub fn argc(&self) -> usize {
        self.args.len()
    }

    /// Argument `i`'s bytes.
    pub fn arg(&self, i: usize) -> &'a [u8] {
        let mut len = 0usize;
        // SAFETY: a valid argument string; the bytes live as long as the call.
        unsafe {
            let p = (api().string_ptr_len)(self.args[i], &mut len);
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    }

    /// Replies with the standard wrong-number-of-arguments error.
    pub fn wrong_arity(&self) -> c_int {
        // SAFETY: a valid context.
        unsafe { (api().wrong_arity)(self.raw) }
    }

    /// Replies with an error (`msg` starts with its code, e.g. `ERR …`).
    pub fn reply_error(&self, msg: &str) -> c_int {
        let msg = std::ffi::CString::new(msg.replace(['\0', '\r', '\n'], " "))
            .expect("no zero bytes left");
        // SAFETY: a valid context and C string (Redis copies it).
        unsafe { (api().reply_with_error)(self.raw, msg.as_ptr()) }
    }

    /// Replies with a bulk string.
    pub fn reply_bytes(&self, bytes: &[u8]) -> c_int {
        // SAFETY: a valid context; Redis copies the bytes.
        unsafe { (api().reply_with_string_buffer)(self.raw, bytes.as_ptr().cast(), bytes.len()) }
    }

    /// Replies with a status (`OK`).
    pub fn reply_simple(&self, status: &str) -> c_int {
        let s = std::ffi::CString::new(status).expect("a status has no zero byte");
        // SAFETY: a valid context and C string (Redis copies it).
        unsafe { (api().reply_with_simple_string)(self.raw, s.as_ptr()) }
    }

    /// Replies with an integer.
    pub fn reply_int(&self, n: i64) -> c_int {
        // SAFETY: a valid context.
        unsafe { (api().reply_with_long_long)(self.raw, n) }
    }

    /// Replies with a double.
    pub fn reply_double(&self, x: f64) -> c_int {
        // SAFETY: a valid context.
        unsafe { (api().reply_with_double)(self.raw, x) }
    }

    /// Starts an array reply of `n` elements (the next `n` replies).
    pub fn reply_array(&self, n: usize) -> c_int {
        // SAFETY: a valid context.
        unsafe { (api().reply_with_array)(self.raw, n as c_long) }
    }

    /// Whether the server is a cluster node.
    pub fn in_cluster(&self) -> bool {
        // SAFETY: a valid context.
        unsafe { (api().get_context_flags)(self.raw) & CTX_FLAGS_CLUSTER != 0 }
    }

    /// Whether a write that needs memory must be refused: the server is past `maxmemory`
    /// and the call comes from a client (not its primary, not the AOF being loaded).
    pub fn out_of_memory(&self) -> bool {
        // SAFETY: a valid context.
        let flags = unsafe { (api().get_context_flags)(self.raw) };
        flags & CTX_FLAGS_OOM != 0 && flags & (CTX_FLAGS_REPLICATED | CTX_FLAGS_LOADING) == 0
    }

    /// Opens the key named `name` to read (or also to write), checking, for keys the
    /// command did not declare (a filter's shards found from its name), that the calling
    /// user may.
    pub fn open(&self, name: &[u8], write: bool, check_acl: bool) -> Result<Key<'_>, String> {
        let s = OwnedString::new(self, name);
        if check_acl && !self.may(&s, write) {
            return Err(format!(
                "NOPERM this user has no permissions to access the '{}' key",
                String::from_utf8_lossy(name)
            ));
        }
        let mode = if write { READ | WRITE } else { READ };
        // SAFETY: a valid context and key name; the key is closed when `Key` drops.
        let raw = unsafe { (api().open_key)(self.raw, s.raw, mode) };
        Ok(Key {
            ctx: self,
            raw: NonNull::new(raw),
            name: s,
        })
    }

    /// Whether the current user may read (or write) key `s`.
    fn may(&self, s: &OwnedString, write: bool) -> bool {
        let a = api();
        // SAFETY: a valid context; the user name is freed with the call's other strings,
        // the user object here.
        unsafe {
            let name = (a.get_current_user_name)(self.raw);
            if name.is_null() {
                return true; // no client (replication, AOF loading): always allowed
            }
            let user = (a.get_module_user_from_user_name)(name);
            (a.free_string)(self.raw, name);
            if user.is_null() {
                return false;
            }
            let flags = if write {
                KEY_ACCESS | KEY_UPDATE
            } else {
                KEY_ACCESS
            };
            let ok = (a.acl_check_key_permissions)(user, s.raw, flags) == OK;
            (a.free_module_user)(user);
            ok
        }
    }

    /// Propagates `command key a b` to the AOF and the replicas (all three as bytes).
    pub fn replicate(&self, command: &CStr, key: &[u8], a: &[u8], b: &[u8]) {
        // SAFETY: a valid context; format "bbb": three (pointer, length) pairs, copied.
        unsafe {
            (api().replicate)(
                self.raw,
                command.as_ptr(),
                c"bbb".as_ptr(),
                key.as_ptr().cast::<c_char>(),
                key.len(),
                a.as_ptr().cast::<c_char>(),
                a.len(),
                b.as_ptr().cast::<c_char>(),
                b.len(),
            );
        }
    }
}

impl Ctx<'_> {
    /// Propagates the command as it was called (deterministic ones: the same data gives
    /// the same result on a replica).
    pub fn replicate_verbatim(&self) {
        // SAFETY: a valid context.
        unsafe {
            (api().replicate_verbatim)(self.raw);
        }
    }
}

/// A string created for a call (a key name), freed on drop.
struct OwnedString {
    ctx: *mut RawCtx,
    raw: *mut RawString,
}

impl OwnedString {
    fn new(ctx: &Ctx<'_>, bytes: &[u8]) -> OwnedString {
        // SAFETY: a valid context; Redis copies the bytes.
        let raw = unsafe { (api().create_string)(ctx.raw, bytes.as_ptr().cast(), bytes.len()) };
        OwnedString { ctx: ctx.raw, raw }
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        // SAFETY: created by `create_string` in this context, freed once.
        unsafe { (api().free_string)(self.ctx, self.raw) }
    }
}

/// What an opened key holds.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// No such key.
    Empty,
    /// A string.
    String,
    /// A hash.
    Hash,
    /// Anything else.
    Other,
}

/// An opened key, closed on drop.
pub struct Key<'c> {
    ctx: &'c Ctx<'c>,
    raw: Option<NonNull<RawKey>>,
    name: OwnedString,
}

impl Key<'_> {
    /// What the key holds.
    pub fn kind(&self) -> KeyKind {
        let Some(k) = self.raw else {
            return KeyKind::Empty;
        };
        // SAFETY: an open key.
        match unsafe { (api().key_type)(k.as_ptr()) } {
            KEYTYPE_EMPTY => KeyKind::Empty,
            KEYTYPE_STRING => KeyKind::String,
            KEYTYPE_HASH => KeyKind::Hash,
            _ => KeyKind::Other,
        }
    }

    /// The string's bytes, in place (empty for a missing key).
    pub fn bytes(&self) -> &[u8] {
        if self.kind() != KeyKind::String {
            return &[];
        }
        let k = self.raw.expect("a string key is open");
        let mut len = 0usize;
        // SAFETY: an open string key; the bytes stay valid while it is open and not
        // changed, which the borrow of `self` ensures.
        unsafe {
            let p = (api().string_dma)(k.as_ptr(), &mut len, READ);
            if p.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    }

    /// The string's bytes, in place and writable, grown with zeros to at least `len`
    /// (a key opened to write, holding a string).
    pub fn bytes_mut(&mut self, len: usize) -> Result<&mut [u8], String> {
        let k = self.raw.ok_or("ERR the key is not open")?.as_ptr();
        let mut have = 0usize;
        // SAFETY: an open string key, opened to write; the bytes stay valid while it is open
        // and borrowed mutably here.
        unsafe {
            (api().string_dma)(k, &mut have, READ);
            if have < len && (api().string_truncate)(k, len) != OK {
                return Err("ERR could not grow the shard".into());
            }
            let p = (api().string_dma)(k, &mut have, READ | WRITE);
            if p.is_null() {
                return Err("ERR the shard could not be written in place".into());
            }
            Ok(std::slice::from_raw_parts_mut(p.cast::<u8>(), have))
        }
    }

    /// Makes this key (missing, opened to write) a string of `len` zero bytes, allocated
    /// at once at its full length.
    pub fn create_string(&mut self, len: usize) -> Result<(), String> {
        let k = self.raw.ok_or("ERR the key is not open")?.as_ptr();
        // SAFETY: an open key, opened to write; on a missing key Redis creates the string.
        if unsafe { (api().string_truncate)(k, len) } != OK {
            return Err("ERR could not create the shard".into());
        }
        Ok(())
    }

    /// Sets `field` to `value` in this hash (a key opened to write; created if missing).
    pub fn hash_set(&mut self, field: &[u8], value: &[u8]) -> Result<(), String> {
        let k = self.raw.ok_or("ERR the key is not open")?.as_ptr();
        let f = OwnedString::new(self.ctx, field);
        let v = OwnedString::new(self.ctx, value);
        // SAFETY: an open key opened to write; field and value are strings of this call,
        // the list ends with NULL (REDISMODULE_HASH_NONE = 0). Its count of updated fields
        // says nothing here (0 for new ones): the caller checks the key afterwards.
        unsafe { (api().hash_set)(k, 0, f.raw, v.raw, std::ptr::null_mut::<RawString>()) };
        Ok(())
    }

    /// Fires the keyspace event `event` (class `$`, strings) for this key.
    pub fn notify(&self, event: &CStr) {
        self.notify_as(NOTIFY_STRING, event)
    }

    /// Fires the keyspace event `event` (class `g`, generic) for this key.
    pub fn notify_generic(&self, event: &CStr) {
        self.notify_as(NOTIFY_GENERIC, event)
    }

    fn notify_as(&self, class: c_int, event: &CStr) {
        // SAFETY: a valid context, event name and key name.
        unsafe {
            (api().notify_keyspace_event)(self.ctx.raw, class, event.as_ptr(), self.name.raw);
        }
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.raw {
            // SAFETY: opened by `open_key`, closed once.
            unsafe { (api().close_key)(k.as_ptr()) }
        }
    }
}
