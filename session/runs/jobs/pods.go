package jobs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// errNotStarted is a pod that cannot start: the reason its container
// waits for is not one that passes.
var errNotStarted = errors.New("the pod cannot start")

// waitStarted is the pod of index idx once its container runs or ran (its
// log can be read). The Job starts Parallel pods at a time, so it waits as
// long as ctx lets it, and fails at once when the pod cannot start (its
// image is not on the node) or the Job ended with no pod for idx.
func (e *Executor) waitStarted(ctx context.Context, idx int) (*corev1.Pod, error) {
	var started *corev1.Pod
	var why error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := e.kube.CoreV1().Pods(e.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.indexSelector(idx)})
		if err != nil {
			return false, nil //nolint:nilerr // the API server is retried until ctx ends
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			for _, s := range p.Status.ContainerStatuses {
				switch {
				case s.State.Running != nil || s.State.Terminated != nil:
					started = p
					return true, nil
				case s.State.Waiting != nil && cannotStart(s.State.Waiting.Reason):
					why = fmt.Errorf("%w: %s waits with %s: %s (the image %s must be on the cluster's nodes: kind load docker-image, or a registry they pull from)", errNotStarted, podName(p), s.State.Waiting.Reason, s.State.Waiting.Message, e.cfg.Image)
					return false, why
				}
			}
		}
		if len(pods.Items) == 0 {
			j, err := e.kube.BatchV1().Jobs(e.cfg.Namespace).Get(ctx, e.name, metav1.GetOptions{})
			if err == nil && finished(j) {
				why = fmt.Errorf("Job %s ended with no pod for index %d", e.name, idx)
				return false, why
			}
		}
		return false, nil
	})
	if why != nil {
		return nil, why
	}
	if err != nil {
		return nil, fmt.Errorf("waiting for the pod of index %d of Job %s: %w", idx, e.name, err)
	}
	return started, nil
}

// cannotStart tells whether a container waiting for reason will not start
// by waiting longer.
func cannotStart(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
		return true
	}
	return false
}

// finished tells whether j completed or failed.
func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// follow reads the log of pod into c until its container ends or ctx
// does. A stream that breaks while the container runs is opened again,
// its lines already read skipped.
func (e *Executor) follow(ctx context.Context, pod string, c *collector) error {
	read := 0
	for {
		n, err := e.stream(ctx, pod, read, c)
		read += n
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p, gerr := e.kube.CoreV1().Pods(e.cfg.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		if ended(p) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// stream follows pod's log once from its start, skipping its first skip
// lines, and returns how many new lines it read.
func (e *Executor) stream(ctx context.Context, pod string, skip int, c *collector) (int, error) {
	rc, err := e.kube.CoreV1().Pods(e.cfg.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for i := 0; sc.Scan(); i++ {
		if i < skip {
			continue
		}
		c.line(sc.Text())
		n++
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	return n, nil
}

// ended tells whether p's container ended, or p is gone for good.
func ended(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return true
		}
	}
	return false
}
