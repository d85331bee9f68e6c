package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSmoke(t *testing.T) {
	ns, err := cluster.As("alice").CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oil-smoke"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(ns.Labels)
	_, err = cluster.As("bob").CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oil-bob"}}, metav1.CreateOptions{})
	t.Log(err)
}
