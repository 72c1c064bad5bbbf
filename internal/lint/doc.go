// Package lint holds the test that enforces keeper's house rules on the
// source tree (docs/development.md): the tier table and its forbidden
// edges, the purity of tier 0 and 1 packages, and the short list of
// third-party modules each package may use.
//
// The package has no code of its own; run it with
//
//	go test ./internal/lint
//
// A new package must be added to the tier table in tiers_test.go before the
// test passes, so the table in docs/development.md and the tree stay the same.
package lint
