package group

import "context"

// Heartbeat keeps a member's session alive and tells it whether to rejoin
// (ErrRebalanceInProgress).
func (c *Coordinator) Heartbeat(ctx context.Context, groupID string, generation int32, memberID, instanceID string) error {
	err, callErr := call(ctx, c, func(future chan<- error) {
		g, m, err := c.member(groupID, memberID, instanceID)
		if err != nil {
			future <- err
			return
		}
		if generation != g.generation {
			future <- ErrIllegalGeneration
			return
		}
		g.touch(m)
		if g.state == PreparingRebalance {
			future <- ErrRebalanceInProgress
			return
		}
		future <- nil
	})
	if callErr != nil {
		return callErr
	}
	return err
}
