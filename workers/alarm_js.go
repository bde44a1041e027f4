//go:build js && wasm

package workers

import (
	"context"
	"syscall/js"
)

// alarmGlobal is the name of the function the entry's Durable Object
// classes call from alarm() with (alarm, length): the number of the alarm
// the entry holds ({storage, env, done}) and the length of the frame
// [class] in the buffer.
const alarmGlobal = "__goAlarm"

// AlarmHandler runs a Durable Object's alarm: state is the object's
// storage, env the Worker's environment. Unlike an ObjectMethod it may
// wait, for a fetch say: each synchronous step it takes over the object's
// storage is still atomic, and other calls to the object may run between
// its awaits. An error, or a panic, fails the alarm, which the runtime then
// retries.
type AlarmHandler func(ctx context.Context, state State, env Env) error

var alarmHandlers = map[string]AlarmHandler{}

// ExportAlarm serves the alarms of the Durable Object class named class.
// The entry's alarm() returns a promise that the alarm's done settles:
// with nothing, or with the failure's message.
func ExportAlarm(class string, handle AlarmHandler) {
	if len(alarmHandlers) == 0 {
		js.Global().Set(alarmGlobal, goFunc(startAlarm))
	}
	alarmHandlers[class] = handle
}

func startAlarm(alarmHandle, frameLength, _ int) int {
	alarm := Handle(alarmHandle)
	class := readFrame(receive(frameLength)).Str()
	runEvent(alarm, "", func() error {
		handle, ok := alarmHandlers[class]
		if !ok {
			return errNoAlarm(class)
		}
		return handle(context.Background(), State{alarm}, EnvOf(alarm))
	})
	return 0
}

type errNoAlarm string

func (e errNoAlarm) Error() string {
	return "no Durable Object alarm for class " + string(e) + " in the Go program"
}
