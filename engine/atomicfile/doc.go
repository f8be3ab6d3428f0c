// Package atomicfile replaces a file's content so that a reader, or the file
// after a failed write, holds the old content or the new, never part of one: the
// new content goes to a temporary file beside it, which is renamed over it only
// once it is whole. A full disk therefore costs the write, not the file.
package atomicfile
