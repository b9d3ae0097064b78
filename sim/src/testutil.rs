//! Helpers shared by the simulator's unit tests.

use nexus_core::frame::{Decoder, Header};

/// Feed `bytes` to `dec` and call `f` with every checked frame's header and payload.
pub fn for_each_frame(dec: &mut Decoder, bytes: &[u8], mut f: impl FnMut(&Header, &[u8])) {
    let mut rest = bytes;
    loop {
        let (used, got) = {
            let (used, frame) = dec.feed(rest);
            match frame {
                Some(fr) => {
                    f(&fr.header, fr.payload);
                    (used, true)
                }
                None => (used, false),
            }
        };
        rest = &rest[used..];
        if !got && rest.is_empty() {
            break;
        }
    }
}
