package registry

// HostnameCollisions reports whether some tenant refuses the hosts other
// objects serve (its ingress.hostnameCollision is not off): only then do
// the server's Ingresses and routes hold their hosts, and the Gatekeeper
// export sync the kinds that serve hosts.
func (s *Snapshot) HostnameCollisions() bool {
	for _, t := range s.registry.Tenants {
		if t.Ingress != nil && t.Ingress.HostnameCollision != "" && t.Ingress.HostnameCollision != CollisionOff {
			return true
		}
	}
	return false
}
