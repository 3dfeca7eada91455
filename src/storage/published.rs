//! [`Published`]: the growable filter's layers, published through atomic pointers.
//!
//! An append-only array of heap objects. A slot goes from null to a `Box::into_raw` pointer
//! exactly once (a compare-exchange), is never changed or freed while `&self` lives, and is
//! freed in `Drop`, which has `&mut self`. It lives in `storage`, the crate's one `unsafe`
//! module, because turning a published pointer back into a reference is `unsafe`.

use crate::sync::{
    AtomicPtr,
    Ordering::{Acquire as SlotAcquire, SeqCst},
};
use core::marker::PhantomData;

/// Up to `N` objects, installed once each, never removed while the array lives.
pub(crate) struct Published<T, const N: usize> {
    slots: [AtomicPtr<T>; N],
    /// Owns the `T`s: gives `Published` the auto traits of `Box<T>` (an `AtomicPtr` alone is
    /// `Send + Sync` whatever `T` is).
    _own: PhantomData<Box<T>>,
}

impl<T, const N: usize> Published<T, N> {
    /// An array whose slot 0 holds `first`.
    pub(crate) fn new(first: T) -> Self {
        let slots: [AtomicPtr<T>; N] =
            core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut()));
        slots[0].store(Box::into_raw(Box::new(first)), SeqCst);
        Published {
            slots,
            _own: PhantomData,
        }
    }

    /// The object in slot `i`, if installed (an Acquire load: everything its installer did
    /// before installing it is visible).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let p = self.slots.get(i)?.load(SlotAcquire);
        // SAFETY: a non-null slot holds a pointer from `Box::into_raw` (in `new` or `install`)
        // that is freed only in `drop`, which cannot run while `&self` is borrowed; the
        // Acquire load synchronises with the publishing store/compare-exchange, so the pointee
        // is fully initialised. We hand out only shared references.
        unsafe { p.as_ref() }
    }

    /// The object in slot `i`, exclusively (no other reference can exist: `&mut self`).
    #[cfg(all(unix, not(blockbloom_loom)))]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let p = *self.slots.get_mut(i)?.get_mut();
        // SAFETY: as in `get`; `&mut self` excludes every other reference to the pointee.
        unsafe { p.as_mut() }
    }

    /// Installs `value` in the empty slot `i` with one compare-exchange (SeqCst: the
    /// growable filter's proof places installs in the single total order). Returns the value
    /// back if the slot was taken (or `i` is out of range).
    pub(crate) fn install(&self, i: usize, value: Box<T>) -> Result<(), Box<T>> {
        let Some(slot) = self.slots.get(i) else {
            return Err(value);
        };
        let p = Box::into_raw(value);
        match slot.compare_exchange(core::ptr::null_mut(), p, SeqCst, SlotAcquire) {
            Ok(_) => Ok(()),
            // SAFETY: `p` came from `Box::into_raw` just above and was never published (the
            // exchange failed), so we still own it exclusively.
            Err(_) => Err(unsafe { Box::from_raw(p) }),
        }
    }
}

impl<T, const N: usize> Drop for Published<T, N> {
    fn drop(&mut self) {
        for slot in &self.slots {
            let p = slot.load(SlotAcquire);
            if !p.is_null() {
                // SAFETY: `p` came from `Box::into_raw`, was installed exactly once, and no
                // reference from `get` outlives `&self`, which `drop`'s `&mut self` excludes.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;

    #[test]
    fn install_once_and_drop_everything() {
        let s: Published<String, 3> = Published::new("a".into());
        assert_eq!(s.get(0).map(String::as_str), Some("a"));
        assert!(s.get(1).is_none() && s.get(7).is_none());
        assert!(s.install(1, Box::new("b".into())).is_ok());
        assert_eq!(*s.install(1, Box::new("c".into())).unwrap_err(), "c");
        assert!(s.install(3, Box::new("d".into())).is_err());
        assert_eq!(s.get(1).map(String::as_str), Some("b"));
    }
}
