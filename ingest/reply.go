package ingest

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reply is a handler's answer, written to the connection in request order.
// A nil reply means no response is sent (Produce with acks=0).
type reply interface {
	// writeTo writes the whole response frame for correlationID.
	writeTo(w *responseWriter, correlationID int32) error
	// release returns what the reply holds (file sections) whether or not it
	// was written.
	release()
	// throttle raises the response's throttle_time_ms to at least ms.
	throttle(ms int32)
}

// messageReply is a response kmsg encodes in full.
type messageReply struct {
	response kmsg.Response
}

func (r messageReply) writeTo(w *responseWriter, correlationID int32) error {
	frame := appendResponseHeader(w.buffer(), correlationID, r.response.Key(), r.response.IsFlexible())
	frame = r.response.AppendTo(frame)
	return w.writeFrame(frame, nil)
}

func (messageReply) release() {}

func (r messageReply) throttle(ms int32) {
	if t, ok := r.response.(kmsg.ThrottleResponse); ok {
		if cur, _ := t.Throttle(); cur >= ms {
			return
		}
	}
	if t, ok := r.response.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(ms)
	}
}

// reply wraps a kmsg response as a reply.
func replyWith(response kmsg.Response) reply { return messageReply{response: response} }

// awaitedReply is a reply that may be written once wait returns: a
// produce whose batches are appended and whose acknowledgements (an
// fsync, the followers) are awaited. The connection's responder waits
// and writes it while the processor handles the next produce request.
type awaitedReply struct {
	reply
	wait func()
}

// splice says where a file section goes in a frame: after frame[:at].
type splice struct {
	at      int
	section section
}

// finishFrame writes the frame size into the first four bytes of frame,
// counting the spliced sections that are not in it.
func finishFrame(frame []byte, splices []splice) error {
	size := int64(len(frame) - frameSizeBytes)
	for _, s := range splices {
		size += s.section.length
	}
	if size > 1<<31-1 {
		return fmt.Errorf("ingest: response of %d bytes does not fit a frame", size)
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	return nil
}
