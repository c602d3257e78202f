package workspace

import (
	"reflect"
	"testing"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consumed are the user options the workspace layer acts on itself; they
// must not reach a driver.
var consumed = map[string]bool{
	"RestoreOptions.Discard":     true, // no safety checkpoint
	"RestoreOptions.Checkpoint":  true, // the safety checkpoint's options (checked below)
	"DestroyOptions.Discard":     true, // no final checkpoint
	"ReopenOptions.Wait":         true, // the workspace layer waits
	"OpenOptions.Services":       true, // the workspace layer's: the driver gets HeadEnv from it
	"ReopenOptions.Services":     true,
	"DestroyOptions.KeepRunning": true, // the workspace layer stops the head's processes
}

// layers are the driver options the workspace layer sets itself, fed by
// no user option.
var layers = map[string]bool{
	"Scan": true, // the safety checkpoints before restore, fork, destroy and land
}

// derived are the driver options the workspace layer makes from a user
// option of another name (set once the workspace is open: see Open).
var derived = map[string]string{
	"HeadEnv": "Services",
}

// nonZero sets every field of the struct v points to a non-zero value
// that differs from the defaults.
func nonZero(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("user-" + rv.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(12345)
		case reflect.Slice:
			sl := reflect.MakeSlice(f.Type(), 1, 1)
			sl.Index(0).SetString("a/b")
			f.Set(sl)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf("A"), reflect.ValueOf("x"))
			f.Set(m)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			nonZero(t, f.Interface())
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[grove.Signature]() {
				f.Set(reflect.ValueOf(grove.Signature{Name: "n", Email: "e"}))
				continue
			}
			nonZero(t, f.Addr().Interface())
		default:
			t.Fatalf("field %s of kind %v: teach the test", rv.Type().Field(i).Name, f.Kind())
		}
	}
}

// reaches asserts that every field of user either reaches driver with the
// same value or is consumed, and that every driver field is fed.
func reaches(t *testing.T, user, driver any) {
	t.Helper()
	u, d := reflect.ValueOf(user).Elem(), reflect.ValueOf(driver).Elem()
	for i := range u.NumField() {
		name := u.Type().Name() + "." + u.Type().Field(i).Name
		df := d.FieldByName(u.Type().Field(i).Name)
		if consumed[name] {
			assert.False(t, df.IsValid(), "%s is the workspace layer's, but the driver receives it", name)
			continue
		}
		require.True(t, df.IsValid(), "%s never reaches the driver", name)
		assert.Equal(t, u.Field(i).Interface(), df.Interface(), "%s changed on the way to the driver", name)
	}
	for i := range d.NumField() {
		name := d.Type().Field(i).Name
		if from, ok := derived[name]; ok {
			name = from
		}
		if layers[name] {
			continue
		}
		assert.True(t, u.FieldByName(name).IsValid(),
			"the driver's %s.%s is fed by no user option", d.Type().Name(), d.Type().Field(i).Name)
	}
}

func TestEveryUserOptionReachesTheDriverOrIsConsumed(t *testing.T) {
	var open OpenOptions
	nonZero(t, &open)
	reaches(t, &open, driverOpen(&open))

	var reopen ReopenOptions
	nonZero(t, &reopen)
	reaches(t, &reopen, driverReopen(&reopen))

	var cp CheckpointOptions
	nonZero(t, &cp)
	dcp, err := driverCheckpoint("checkpoint", &cp, "default")
	require.NoError(t, err)
	// Paths reaches the driver through driverPaths (Head.Checkpoint's
	// alone), for a backend that can narrow.
	dcp.Paths, err = driverPaths("checkpoint", cp.Paths, grove.Capabilities{PathCheckpoints: true})
	require.NoError(t, err)
	reaches(t, &cp, dcp)
	none, err := driverPaths("checkpoint", cp.Paths, grove.Capabilities{})
	require.NoError(t, err)
	assert.Nil(t, none, "a backend that cannot narrow takes a whole checkpoint")

	var restore RestoreOptions
	nonZero(t, &restore)
	reaches(t, &restore, &struct{}{}) // a driver's restore takes no options
	safety, err := driverCheckpoint("restore", &restore.Checkpoint, "default")
	require.NoError(t, err)
	assert.Nil(t, safety.Paths, "a safety checkpoint is always whole")
	safety.Paths = restore.Checkpoint.Paths
	reaches(t, &restore.Checkpoint, safety)

	var destroy DestroyOptions
	nonZero(t, &destroy)
	reaches(t, &destroy, driverDestroy(&destroy))

	var log LogOptions
	nonZero(t, &log)
	reaches(t, &log, driverLog(&log))

	var rc ReconcileOptions
	nonZero(t, &rc)
	reaches(t, &rc, driverReconcile(&rc))

	var rp RetentionPolicy
	nonZero(t, &rp)
	drp, err := driverRetain("retain", &rp)
	require.NoError(t, err)
	reaches(t, &rp, drp)
}

// The driver receives options normalized: never nil, defaults filled.
func TestDriverOptionsAreNormalized(t *testing.T) {
	d, err := driverCheckpoint("checkpoint", nil, "grove checkpoint")
	require.NoError(t, err)
	assert.Equal(t, "grove checkpoint", d.Message)
	assert.Equal(t, grove.DefaultAuthor, d.Author)
	assert.Equal(t, int64(grove.DefaultMaxNewFileSize), d.MaxNewFileSize)
	d, err = driverCheckpoint("checkpoint", &CheckpointOptions{MaxNewFileSize: -7}, "m")
	require.NoError(t, err)
	assert.Equal(t, int64(-1), d.MaxNewFileSize, "any negative cap is no cap")
	_, err = driverCheckpoint("checkpoint", &CheckpointOptions{Include: []string{"../out"}}, "m")
	assert.Equal(t, grove.PathEscape, grove.CodeOf(err))
	assert.NotNil(t, driverOpen(nil))
	assert.NotNil(t, driverReopen(nil))
	assert.NotNil(t, driverLog(nil))
	assert.NotNil(t, driverDestroy(nil))
	assert.Equal(t, grove.DefaultStaleLockAge, driverReconcile(nil).StaleLockAge)
	for _, p := range []*RetentionPolicy{nil, {}, {KeepLast: -1}, {KeepWithin: -1}, {Keep: []grove.CheckpointID{"x"}}} {
		_, err := driverRetain("retain", p)
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%+v", p)
	}
}
