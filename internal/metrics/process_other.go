//go:build !linux

package metrics

// AddProcessMetrics registers nothing outside Linux: the process metrics
// are read from /proc.
func (r *Registry) AddProcessMetrics() {}
