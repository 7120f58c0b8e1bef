// Package regularfile opens the files faultline is given to read (scenario
// files, journals, keys, passwords, CA bundles, known-hosts files,
// kubeconfigs) so that none can hold it: open(2) does not block on a FIFO,
// anything but a regular file is refused, and a file larger than its cap
// is refused before it is read, each with an error naming the file.
//
// It imports nothing of faultline's.
package regularfile
