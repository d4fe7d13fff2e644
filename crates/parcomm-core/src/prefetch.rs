//! Cache hints. The simulator's per-stream state (thousands of streams on a
//! large fabric) does not stay in cache, and handling a packet chases
//! pointers through it one miss at a time; asking for the lines early lets
//! the misses overlap with other work. Hints only: no effect on results.

/// Cache line size assumed for hints.
const LINE: usize = 64;

/// Ask for the cache line holding `p` (no-op where unsupported).
#[inline(always)]
pub fn line<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Ask for every cache line of `*v`.
#[inline(always)]
pub fn value<T: ?Sized>(v: &T) {
    span((v as *const T).cast(), std::mem::size_of_val(v));
}

/// Ask for every cache line of the `len` bytes from `start`.
#[inline(always)]
pub fn span(start: *const u8, len: usize) {
    let mut a = start as usize & !(LINE - 1);
    let end = start as usize + len.max(1);
    while a < end {
        line(a as *const u8);
        a += LINE;
    }
}
