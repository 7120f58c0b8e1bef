package management

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Queues are the work queues of the management plane's controllers, by
// controller name, as their managers count them from their start
// (client-go's workqueue metrics).
type Queues map[string]Queue

// Queue is one controller's work queue.
type Queue struct {
	Adds, Retries float64
	// Wait is the time items waited in the queue; Work the time their
	// reconciles took.
	Wait, Work histogram
}

// histogram is a Prometheus histogram: its count, sum and cumulative
// buckets by upper bound.
type histogram struct {
	Count, Sum float64
	Buckets    map[float64]float64
}

// QueueUse is what one controller's work queue did between two readings.
type QueueUse struct {
	Controller string  `json:"controller"`
	Adds       float64 `json:"adds"`
	Retries    float64 `json:"retries"`
	// MeanWaitSeconds is how long an item waited in the queue, on
	// average; P90WaitSeconds the bucket bound 90% of them waited within.
	MeanWaitSeconds float64 `json:"meanWaitSeconds"`
	P90WaitSeconds  float64 `json:"p90WaitSeconds"`
	// WorkSeconds is the reconciles' time, all workers together.
	WorkSeconds float64 `json:"workSeconds"`
}

// Queues reads the work queues: from this process's controller-runtime
// registry for the compiled stack, else from each manager's metrics.
func (m *Plane) Queues(ctx context.Context) (Queues, error) {
	if m.stack.Compiled {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return nil, fmt.Errorf("read the controllers' work queues: %w", err)
		}
		return queuesOf(families), nil
	}
	all := Queues{}
	for _, mgr := range m.managers {
		families, err := scrape(ctx, "http://"+loopback(mgr.metricsPort)+"/metrics")
		if err != nil {
			return nil, fmt.Errorf("read the work queues of %s: %w", mgr.name, err)
		}
		for name, q := range queuesOf(families) {
			all[mgr.name+"/"+name] = q
		}
	}
	return all, nil
}

// scrape reads a manager's metrics in the text format.
func scrape(ctx context.Context, url string) ([]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	return families, nil
}

// queuesOf picks the work queues out of metric families.
func queuesOf(families []*dto.MetricFamily) Queues {
	qs := Queues{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			name := label(mt, "name")
			if name == "" {
				continue
			}
			q := qs[name]
			switch f.GetName() {
			case "workqueue_adds_total":
				q.Adds += mt.GetCounter().GetValue()
			case "workqueue_retries_total":
				q.Retries += mt.GetCounter().GetValue()
			case "workqueue_queue_duration_seconds":
				q.Wait = q.Wait.add(mt.GetHistogram())
			case "workqueue_work_duration_seconds":
				q.Work = q.Work.add(mt.GetHistogram())
			default:
				continue
			}
			qs[name] = q
		}
	}
	return qs
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func (h histogram) add(p *dto.Histogram) histogram {
	if h.Buckets == nil {
		h.Buckets = map[float64]float64{}
	}
	h.Count += float64(p.GetSampleCount())
	h.Sum += p.GetSampleSum()
	for _, b := range p.GetBucket() {
		h.Buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
	}
	return h
}

// Since is what each queue did after before was read, busiest wait
// first; queues that added nothing are left out.
func (q Queues) Since(before Queues) []QueueUse {
	var uses []QueueUse
	for name, now := range q {
		was := before[name]
		u := QueueUse{Controller: name, Adds: now.Adds - was.Adds, Retries: now.Retries - was.Retries, WorkSeconds: milli(now.Work.Sum - was.Work.Sum)}
		if u.Adds <= 0 {
			continue
		}
		if n := now.Wait.Count - was.Wait.Count; n > 0 {
			u.MeanWaitSeconds = milli((now.Wait.Sum - was.Wait.Sum) / n)
			u.P90WaitSeconds = now.Wait.quantileSince(was.Wait, 0.9)
		}
		uses = append(uses, u)
	}
	slices.SortFunc(uses, func(a, b QueueUse) int {
		if c := cmp.Compare(b.MeanWaitSeconds, a.MeanWaitSeconds); c != 0 {
			return c
		}
		return strings.Compare(a.Controller, b.Controller)
	})
	return uses
}

// quantileSince is the upper bound of the first bucket that holds the
// fraction of the samples taken after was (past the largest bound: that
// bound; no samples: 0).
func (h histogram) quantileSince(was histogram, fraction float64) float64 {
	total := h.Count - was.Count
	bounds := make([]float64, 0, len(h.Buckets))
	for b := range h.Buckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	for _, b := range bounds {
		if h.Buckets[b]-was.Buckets[b] >= fraction*total {
			if math.IsInf(b, 1) && len(bounds) > 1 {
				return bounds[len(bounds)-2]
			}
			return b
		}
	}
	return 0
}

// milli rounds seconds to the millisecond.
func milli(s float64) float64 { return math.Round(s*1000) / 1000 }
