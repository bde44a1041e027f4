package httpapi

import (
	"errors"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/api/apitest"
	"github.com/edge-orders/edge-orders/intake"
)

// TestEveryProblemIsInTheDocument: each row of the problem table, and the
// row for anything it does not know, builds a body the OpenAPI document's
// Problem schema allows: its code is in the table of codes, with its
// type and status.
func TestEveryProblemIsInTheDocument(t *testing.T) {
	v, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	errs := []error{errInternal}
	for _, row := range problems {
		errs = append(errs, row.err)
	}
	for _, err := range errs {
		// The errors whose bodies name the order, as the Worker makes them.
		switch {
		case errors.Is(err, intake.ErrRejected):
			err = &intake.Rejection{Reason: "halted", OrderID: "o-1"}
		case errors.Is(err, intake.ErrUnresolved):
			err = &intake.Unsettled{OrderID: "o-1", Attempts: 3, GiveUp: intake.GivenUp}
		case errors.Is(err, intake.ErrOutcomeUnknown):
			err = &intake.Unsettled{OrderID: "o-1", Attempts: 1, NextAttempt: time.Unix(1e9, 0)}
		}
		resp, _, _ := errorResponse(err, "", 1)
		if verr := v.ValidateProblem(resp.Body); verr != nil {
			t.Errorf("%v: %v", err, verr)
		}
	}
}
