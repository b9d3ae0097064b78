//! Stack high-water mark, measured at run time.
//!
//! cortex-m-rt's `paint-stack` feature fills everything between the end of the statics
//! (`_stack_end`) and the initial stack pointer (`_stack_start`, the top of RAM) with
//! [`cortex_m_rt::STACK_PAINT_VALUE`] before `main`. The deepest word no longer holding that
//! value marks the most stack ever used. (A frame that reserved stack but never wrote part of
//! it is not seen; that slack is at most one frame's unused locals.)

/// Stack size available and deepest use, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StackUsage {
    /// Bytes between the end of the statics and the top of RAM.
    pub size_bytes: u32,
    /// Bytes below the top of RAM that have been written since reset.
    pub used_bytes: u32,
}

extern "C" {
    /// Top of the stack (initial SP), from cortex-m-rt's linker script.
    static _stack_start: u32;
    /// Lowest address the stack may reach: the end of .bss (no heap here).
    static _stack_end: u32;
}

/// Scan the painted region for the deepest word the stack has touched.
pub fn usage() -> StackUsage {
    let bottom = core::ptr::addr_of!(_stack_end) as usize;
    let top = core::ptr::addr_of!(_stack_start) as usize;
    let mut addr = bottom;
    while addr < top {
        // SAFETY: `addr` is word-aligned (the linker script asserts both symbols are) and lies
        // in [_stack_end, _stack_start), RAM that is mapped and owned by the stack; reading it
        // does not conflict with any Rust reference (nothing below the live SP is borrowed,
        // and a word above it is only read).
        #[allow(unsafe_code)]
        let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
        if word != cortex_m_rt::STACK_PAINT_VALUE {
            break;
        }
        addr += 4;
    }
    StackUsage {
        size_bytes: (top - bottom) as u32,
        used_bytes: (top - addr) as u32,
    }
}
