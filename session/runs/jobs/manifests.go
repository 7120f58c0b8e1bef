package jobs

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// LabelRun marks the Job, its pods and its ConfigMap with the run's
	// name.
	LabelRun = "faultline.dev/run"
	// ServiceAccount is the pods' service account (deploy/runs), which
	// has no role: a pod reaches nothing but its own lab.
	ServiceAccount = "faultline-run"
	// container is the pods' one container.
	container = "faultline"
	// scenariosMount is where a pod finds the run's scenario files,
	// <index>.yaml.
	scenariosMount = "/scenarios"
	// runFolder is a pod's run folder, which it sends back.
	runFolder = "/tmp/run"
	// gracePeriod is how long a deleted pod has to undo its faults and
	// send its run folder back: the engine's clean-up bound and a
	// margin.
	gracePeriod = 330
)

// configMap holds the run's scenario files, <index>.yaml each.
func configMap(name, namespace string, files []string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{LabelRun: name}},
		Data:       map[string]string{},
	}
	for i, f := range files {
		cm.Data[strconv.Itoa(i)+".yaml"] = f
	}
	return cm
}

// job is the run's Indexed Job: completions one per scenario, parallel at
// a time; no index is tried twice (a scenario's second run would fault
// again what its first may have left), and one failing stops no other.
// Its pods meet the restricted Pod Security Standard.
func job(name, namespace, image string, n, parallel int, args []string) *batchv1.Job {
	labels := map[string]string{LabelRun: name}
	podArgs := append([]string{"run", scenariosMount + "/$(JOB_COMPLETION_INDEX).yaml", "--artifacts", runFolder, "--emit-run-folder"}, args...)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr.To(batchv1.IndexedCompletion),
			Completions:          ptr.To(int32(n)),
			Parallelism:          ptr.To(int32(parallel)),
			BackoffLimitPerIndex: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					ServiceAccountName:            ServiceAccount,
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(gracePeriod)),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  container,
						Image: image,
						// Never pulled: the image is loaded into the
						// nodes (kind load) or served by a registry
						// the nodes already use.
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            podArgs,
						// The lab's API server and etcd and the
						// managers: a lab started in 13-16 s on one
						// core of this machine.
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("1Gi"),
						}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "scenarios", MountPath: scenariosMount, ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "scenarios", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// podName names a pod for people: its name and index.
func podName(p *corev1.Pod) string {
	return fmt.Sprintf("pod %s (index %s)", p.Name, p.Labels[batchv1.JobCompletionIndexAnnotation])
}
