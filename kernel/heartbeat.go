package kernel

// echo answers a heartbeat: the ping goes back unchanged to the peer that
// sent it (frames[0] is its identity). The heartbeat socket is a ROUTER, as
// ipykernel's is: a client's REQ sends its ping behind an empty delimiter
// frame, and gets both back.
func (s *Server) echo(frames [][]byte) {
	if err := s.hb.Send(frames); err != nil {
		s.log.Debug("heartbeat echo failed", "error", err)
	}
}
