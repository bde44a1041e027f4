//go:build js && wasm

package workers

import (
	"errors"
	"strconv"
	"syscall/js"
	"time"

	"github.com/edge-orders/edge-orders/internal/errs"
)

// objectGlobal is the name of the function the entry's Durable Object
// classes call, synchronously, with (state, length): the number of the
// object's DurableObjectState, which the entry holds for the call, and the
// length of the frame [class, method, argument] in the buffer.
const objectGlobal = "__goObject"

// ObjectMethod serves a call of a Durable Object method: state is the
// object's storage, arg the call's one argument, and the answer its one
// result. It must not wait for anything (no binding call, no channel
// another request could fill): it then runs whole, wakes no other
// request's goroutine, and is atomic within the object.
type ObjectMethod func(state State, method string, arg []byte) ([]byte, error)

var objectClasses = map[string]ObjectMethod{}

// ExportObject serves the Durable Object class named class. The entry's
// class forwards each method call, synchronously, and throws what comes
// back if it is an error. A panic, such as an SQL error, becomes the
// thrown error.
func ExportObject(class string, serve ObjectMethod) {
	if len(objectClasses) == 0 {
		js.Global().Set(objectGlobal, goFunc(callObject))
	}
	objectClasses[class] = serve
}

// callObject runs one method call, and answers the length of its result's
// frame in the buffer, or -1 - the length of its error's.
func callObject(stateHandle, frameLength, _ int) int {
	state := State{Handle(stateHandle)}
	f := readFrame(receive(frameLength))
	class, method, arg := f.Str(), f.Str(), f.Bytes()
	result, err := serveObjectCall(class, method, state, arg)
	if err != nil {
		return -1 - send(outFrame{}.Str(err.Error()))
	}
	return send(outFrame{}.Bytes(result))
}

func serveObjectCall(class, method string, state State, arg []byte) (result []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("Durable Object call: " + errs.PanicText(p))
		}
	}()
	serve, ok := objectClasses[class]
	if !ok {
		return nil, errors.New("no Durable Object class " + class + " in the Go program")
	}
	return serve(state, method, arg)
}

// State is a Durable Object's storage, for the duration of one call into
// Go: its SQLite database and its alarm.
type State struct{ h Handle }

// SQLValue is one value of an SQL row: NULL, a number or a text.
type SQLValue struct {
	Null bool
	Num  float64
	Str  string
}

// Rows are a query's answer: its column names, and its rows.
type Rows struct {
	Columns []string
	Values  [][]SQLValue
	// RowsRead is the rows SQLite read to answer, as the runtime bills
	// them (the cursor's rowsRead).
	RowsRead int
}

// Value returns row i's value in column name; NULL if there is none.
func (r Rows) Value(i int, name string) SQLValue {
	for c, n := range r.Columns {
		if n == name && i < len(r.Values) {
			return r.Values[i][c]
		}
	}
	return SQLValue{Null: true}
}

// Exec runs query with params (strings, integers, float64s, nil for
// NULL) bound to its placeholders, synchronously: no await, so the
// object's writes with nothing awaited in between commit together.
func (s State) Exec(query string, params ...any) (Rows, error) {
	frame := outFrame{}.Str(query)
	for _, p := range params {
		switch v := p.(type) {
		case nil:
			frame = frame.Str("n")
		case string:
			frame = frame.Str("s" + v)
		case int:
			frame = frame.Str("d" + strconv.Itoa(v))
		case int64:
			frame = frame.Str("d" + strconv.FormatInt(v, 10))
		case float64:
			frame = frame.Str("d" + strconv.FormatFloat(v, 'g', -1, 64))
		default:
			panic("workers: an SQL parameter of an unknown type")
		}
	}
	answer, err := callSync("sql", frame, int(s.h))
	if err != nil {
		return Rows{}, err
	}
	f := readFrame(answer)
	read := int(f.Int())
	rows := Rows{Columns: make([]string, f.Int()), RowsRead: read}
	for i := range rows.Columns {
		rows.Columns[i] = f.Str()
	}
	for f.More() && len(rows.Columns) > 0 {
		row := make([]SQLValue, len(rows.Columns))
		for c := range row {
			v := f.Bytes()
			switch {
			case len(v) == 0 || v[0] == 'n':
				row[c].Null = true
			case v[0] == 's':
				row[c].Str = string(v[1:])
			default:
				row[c].Num, _ = strconv.ParseFloat(string(v[1:]), 64)
			}
		}
		rows.Values = append(rows.Values, row)
	}
	return rows, f.Err
}

// SetAlarm sets the object's alarm for at. It needs no await: the output
// gate holds the object's answer until the alarm is stored.
func (s State) SetAlarm(at time.Time) {
	jsBridge.Call("setAlarm", int(s.h), at.UnixMilli())
}
