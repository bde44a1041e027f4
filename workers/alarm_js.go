//go:build js && wasm

package workers

import (
	"context"
	"syscall/js"
)

// alarmGlobal is the name of the function the entry's Durable Object
// classes call from alarm() with (class, state, env, done).
const alarmGlobal = "__goAlarm"

// AlarmHandler runs a Durable Object's alarm: state is the object's
// DurableObjectState, env the Worker's environment. Unlike an
// ObjectMethod it may wait, for a fetch say: each synchronous step it
// takes over the object's storage is still atomic, and other calls to the
// object may run between its awaits. An error, or a panic, fails the
// alarm, which the runtime then retries.
type AlarmHandler func(ctx context.Context, state js.Value, env Env) error

var alarmHandlers = map[string]AlarmHandler{}

// ExportAlarm serves the alarms of the Durable Object class named class.
// The entry's alarm() calls the published function with a done callback
// and returns a promise that done settles: with nothing, or with the
// failure's message.
func ExportAlarm(class string, handle AlarmHandler) {
	if len(alarmHandlers) == 0 {
		js.Global().Set(alarmGlobal, js.FuncOf(startAlarm))
	}
	alarmHandlers[class] = handle
}

func startAlarm(_ js.Value, args []js.Value) any {
	class, state, env, done := args[0].String(), args[1], args[2], args[3]
	Release(args[0])
	go func() {
		defer Release(state, env, done)
		failure := runAlarm(class, state, env)
		if failure == "" {
			Release(done.Invoke())
			return
		}
		message, made := crossing([]any{failure})
		Release(done.Invoke(message...))
		Release(made...)
	}()
	return nil
}

// runAlarm runs class's handler and returns its failure, "" for none.
func runAlarm(class string, state, env js.Value) (failure string) {
	defer func() {
		if p := recover(); p != nil {
			failure = "workers: panic in a Durable Object alarm"
		}
	}()
	handle, ok := alarmHandlers[class]
	if !ok {
		return "no Durable Object alarm for class " + class + " in the Go program"
	}
	if err := handle(context.Background(), state, Env{env}); err != nil {
		return err.Error()
	}
	return ""
}
