//! Reading a file a user names (a `.plan`, a program, a recorded flight): only a regular file,
//! only up to a bound in bytes, so a FIFO, a device (`/dev/zero`) or a directory is refused
//! without being read, and a huge file without being loaded. Every error is an
//! [`std::io::Error`] that says why (none panics).

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// Read the file at `path` whole: a regular file of at most `max_bytes` ([`open`]'s checks),
/// and no more than that is read should it grow meanwhile.
pub fn read(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    let (file, _) = open(path, max_bytes)?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("more than the {max_bytes} bytes an input file may hold"),
        ));
    }
    Ok(bytes)
}

/// Open the file at `path` to read: a regular file (a directory, FIFO, device or socket is
/// refused unopened or unread) of at most `max_bytes`, checked by name before opening (opening
/// a FIFO blocks until a writer comes) and again on the open file (it could have been replaced
/// in between); the file and its length, bytes.
pub fn open(path: &Path, max_bytes: u64) -> std::io::Result<(File, u64)> {
    let regular = |m: &Metadata| -> std::io::Result<()> {
        if m.is_dir() {
            return Err(Error::new(ErrorKind::InvalidInput, "it is a directory"));
        }
        if !m.is_file() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "not a regular file (a FIFO, a device or a socket is not read)",
            ));
        }
        if m.len() > max_bytes {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{} bytes, more than the {max_bytes} an input file may hold",
                    m.len()
                ),
            ));
        }
        Ok(())
    };
    regular(&std::fs::metadata(path)?)?;
    let file = OpenOptions::new().read(true).open(path)?;
    let meta = file.metadata()?;
    regular(&meta)?;
    Ok((file, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_the_bound_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.plan");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read(&f, 5).unwrap(), b"12345");
        let e = read(&f, 4).unwrap_err();
        assert!(e.to_string().contains("more than the 4"), "{e}");
        let e = read(dir.path(), 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "it is a directory");
        let e = read(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().starts_with("not a regular file"), "{e}");
        assert!(read(&dir.path().join("absent"), 10).is_err());
        assert_eq!(open(&f, 5).unwrap().1, 5);
    }
}
