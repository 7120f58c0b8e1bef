module github.com/faultline-dev/faultline

go 1.26.8

require (
	github.com/go-logr/logr v1.4.4
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.1.0
	github.com/vmware/govmomi v0.53.0
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
)
