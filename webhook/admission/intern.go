package admission

import "github.com/tenantguard/tenantguard/internal/jsonast"

func init() {
	// The keys and common values of Kubernetes objects, made once: the
	// objects of every request are decoded with these terms instead of a
	// new one each (see jsonast).
	jsonast.Intern(
		// The AdmissionReview's keys, which Decode looks up.
		"request", "resource", "subResource", "requestKind",
		"requestResource", "requestSubResource", "name", "operation",
		"userInfo", "username", "groups", "extra", "object", "oldObject",
		"dryRun", "options", "group", "version",
		"CREATE", "UPDATE", "DELETE", "CONNECT", "",
		// Every object.
		"apiVersion", "kind", "metadata", "namespace", "labels",
		"annotations", "generateName", "uid", "resourceVersion",
		"generation", "creationTimestamp", "deletionTimestamp",
		"ownerReferences", "finalizers", "controller",
		"blockOwnerDeletion", "spec", "status", "v1", "apps/v1",
		"batch/v1",
		// Workloads and pods.
		"replicas", "selector", "matchLabels", "matchExpressions",
		"template", "strategy", "jobTemplate", "schedule", "containers",
		"initContainers", "ephemeralContainers", "image",
		"imagePullPolicy", "command", "args", "env", "ports",
		"containerPort", "hostPort", "protocol", "TCP", "UDP",
		"resources", "requests", "limits", "cpu", "memory",
		"volumeMounts", "mountPath", "readOnly", "subPath", "volumes",
		"emptyDir", "hostPath", "configMap", "secret",
		"persistentVolumeClaim", "claimName", "ephemeral",
		"volumeClaimTemplate", "securityContext", "privileged",
		"runAsNonRoot", "runAsUser", "allowPrivilegeEscalation",
		"capabilities", "windowsOptions", "hostProcess", "hostNetwork",
		"hostPID", "hostIPC", "priorityClassName", "serviceAccountName",
		"nodeSelector", "tolerations", "affinity", "restartPolicy",
		"Always", "IfNotPresent", "Never", "terminationMessagePath",
		"terminationMessagePolicy", "dnsPolicy", "schedulerName",
		// Services and claims.
		"type", "ClusterIP", "NodePort", "LoadBalancer", "targetPort",
		"nodePort", "clusterIP", "externalIPs", "storageClassName",
		"accessModes", "ReadWriteOnce", "storage", "volumeMode",
		"Filesystem",
	)
}
