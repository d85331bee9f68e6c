package quotatest

import (
	"context"
	"errors"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// APIServer keeps one namespace's ConfigMaps as the API server does: each
// write makes a new resourceVersion, and an update of a ConfigMap changed
// since it was read is a conflict. It implements quota.ConfigMaps. The zero
// value is not usable; call NewAPIServer.
type APIServer struct {
	// BeforeUpdate, when set, is called with the ConfigMap's name before
	// each update is applied, outside the server's lock: a test writes
	// there what another replica writes between a read and a write.
	BeforeUpdate func(name string)

	mu      sync.Mutex
	stored  map[string]*corev1.ConfigMap
	version int
}

// NewAPIServer returns a server holding no ConfigMap.
func NewAPIServer() *APIServer {
	return &APIServer{stored: map[string]*corev1.ConfigMap{}}
}

var configMaps = corev1.Resource("configmaps")

// Get returns a copy of the ConfigMap named, or NotFound.
func (s *APIServer) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cm := s.stored[name]; cm != nil {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(configMaps, name)
}

// Create stores cm, or fails with AlreadyExists.
func (s *APIServer) Create(_ context.Context, cm *corev1.ConfigMap, _ metav1.CreateOptions) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored[cm.Name] != nil {
		return nil, apierrors.NewAlreadyExists(configMaps, cm.Name)
	}
	cm = cm.DeepCopy()
	cm.UID = types.UID("uid-" + strconv.Itoa(s.version+1))
	return s.store(cm), nil
}

// Update stores cm if its resourceVersion is the stored one's, else fails
// with a conflict; NotFound when there is none (no create on update).
func (s *APIServer) Update(_ context.Context, cm *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	if s.BeforeUpdate != nil {
		s.BeforeUpdate(cm.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.stored[cm.Name]
	if old == nil {
		return nil, apierrors.NewNotFound(configMaps, cm.Name)
	}
	if old.ResourceVersion != cm.ResourceVersion {
		return nil, apierrors.NewConflict(configMaps, cm.Name, errors.New("changed since read"))
	}
	return s.store(cm), nil
}

// List returns copies of the ConfigMaps the label selector of opts selects,
// in no order.
func (s *APIServer) List(_ context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	selector, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.version)}}
	for _, cm := range s.stored {
		if selector.Matches(labels.Set(cm.Labels)) {
			list.Items = append(list.Items, *cm.DeepCopy())
		}
	}
	return list, nil
}

// Delete removes the ConfigMap named, when it meets the preconditions of
// opts (a conflict otherwise), or fails with NotFound.
func (s *APIServer) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cm := s.stored[name]
	if cm == nil {
		return apierrors.NewNotFound(configMaps, name)
	}
	if p := opts.Preconditions; p != nil && ((p.UID != nil && *p.UID != cm.UID) || (p.ResourceVersion != nil && *p.ResourceVersion != cm.ResourceVersion)) {
		return apierrors.NewConflict(configMaps, name, errors.New("changed since read"))
	}
	delete(s.stored, name)
	return nil
}

// store keeps a copy of cm as its next version; the caller holds s.mu.
func (s *APIServer) store(cm *corev1.ConfigMap) *corev1.ConfigMap {
	s.version++
	cm = cm.DeepCopy()
	cm.ResourceVersion = strconv.Itoa(s.version)
	s.stored[cm.Name] = cm
	return cm.DeepCopy()
}

// Stored returns a copy of the ConfigMap named, nil when there is none.
func (s *APIServer) Stored(name string) *corev1.ConfigMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[name].DeepCopy()
}

// Len is how many ConfigMaps the server holds.
func (s *APIServer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stored)
}

// Version is the resourceVersion of the last write, as a number: 0 before
// the first.
func (s *APIServer) Version() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}
