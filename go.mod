module keeper

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/cockroachdb/datadriven v1.0.3 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
