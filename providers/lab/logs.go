package lab

import (
	"io"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/grpclog"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// RouteLibraryLogs sends the process-wide loggers of the libraries the lab
// runs (controller-runtime, klog, gRPC) to log, so a lab process prints
// only what its user asked for. They are process-wide: main or a suite
// calls it, once, before Start; the lab itself never sets them.
func RouteLibraryLogs(log logr.Logger) {
	log = withoutBodies(log)
	ctrllog.SetLogger(log)
	klog.SetLogger(log)
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
}

// maxLibraryLevel is the most verbose level a lab logs at, whatever the
// user asked: from level 8 on client-go logs the bodies of the requests
// and responses it sends through the lab's controllers (Secrets included:
// CA and etcd keys, kubeconfigs), and from 9 the headers as curl
// commands (rest/request.go, transport/round_trippers.go).
const maxLibraryLevel = 7

// withoutBodies is log with its levels past maxLibraryLevel disabled.
func withoutBodies(log logr.Logger) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	return logr.New(cappedSink{LogSink: log.GetSink()})
}

// cappedSink is a sink that is not enabled past maxLibraryLevel.
type cappedSink struct{ logr.LogSink }

func (s cappedSink) Enabled(level int) bool {
	return level <= maxLibraryLevel && s.LogSink.Enabled(level)
}

func (s cappedSink) WithValues(kv ...any) logr.LogSink {
	return cappedSink{s.LogSink.WithValues(kv...)}
}

func (s cappedSink) WithName(name string) logr.LogSink {
	return cappedSink{s.LogSink.WithName(name)}
}
