package bridge

import (
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// writeLoop is the session's only writer to the container. Control frames
// go first, so pings and pongs pass between data frames even while the
// client keeps sending; the close frame is the last frame written, after
// which data frames are refused with errClosing. A write error drops the
// connection and ends the session.
func (s *session) writeLoop() {
	defer s.writers.Done()
	closed := false // the close frame was written (or could not be)
	var werr error  // the first write error
	for {
		select {
		case f := <-s.ctl:
			werr = s.writeControl(f, closed, werr)
			continue
		default:
		}
		select {
		case f := <-s.ctl:
			werr = s.writeControl(f, closed, werr)
		case p := <-s.closeReq:
			if !closed && werr == nil {
				s.conn.SetWriteDeadline(time.Now().Add(s.h.opts.CloseTimeout))
				if err := s.conn.WriteFrame(true, wsframe.OpClose, p); err != nil {
					s.log.Debug("writing the close frame failed", "err", err)
				}
			}
			closed = true
			close(s.closeDone)
		case d := <-s.data:
			switch {
			case werr != nil:
				d.done <- werr
			case closed:
				d.done <- errClosing
			default:
				werr = s.conn.WriteFrame(d.fin, d.op, d.payload)
				if werr != nil {
					s.writeFailed(werr)
				}
				d.done <- werr
			}
		case <-s.stop:
			return
		}
	}
}

// writeControl writes a ping or pong unless the close frame went out or a
// write failed, and returns the write error in force.
func (s *session) writeControl(f ctlFrame, closed bool, werr error) error {
	if closed || werr != nil {
		return werr
	}
	if err := s.conn.WriteFrame(true, f.op, f.payload); err != nil {
		s.writeFailed(err)
		return err
	}
	return nil
}

// writeFailed ends the session after a failed write: the connection is
// broken, so it is dropped without a close frame, which also stops the
// reader.
func (s *session) writeFailed(err error) {
	s.end(writeFailed(err), nil)
	s.conn.Close()
}
