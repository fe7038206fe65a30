//go:build tools

// Package tools pins the Descheduler that the rebalance comparison runs.
package tools

import _ "sigs.k8s.io/descheduler/cmd/descheduler"
