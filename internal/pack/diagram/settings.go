package diagram

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// A setting is one key of the pack's settings in the config file
// (packs: {diagram: {settings: {...}}}).
type setting struct {
	key   string
	apply func(o *Options, v any) error
}

var settings = []setting{
	{"allow_commands", func(o *Options, v any) (err error) { o.AllowCommands, err = boolValue(v); return }},
	{"http_allow_hosts", func(o *Options, v any) error {
		hosts, err := stringList(v)
		if err != nil {
			return err
		}
		for i, h := range hosts {
			if _, err := parseHostRule(h); err != nil {
				return fmt.Errorf("[%d]: %v", i, err)
			}
		}
		o.HTTPAllowHosts = hosts
		return nil
	}},
	{"http_allow_cidrs", func(o *Options, v any) error {
		list, err := stringList(v)
		if err != nil {
			return err
		}
		o.HTTPAllowCIDRs = nil
		for i, s := range list {
			p, err := httpguard.ParseNetwork(s)
			if err != nil {
				return fmt.Errorf("[%d]: %v", i, err)
			}
			o.HTTPAllowCIDRs = append(o.HTTPAllowCIDRs, p)
		}
		return nil
	}},
	{"max_concurrent_runs", intSetting(func(o *Options) *int { return &o.MaxConcurrentRuns })},
	{"default_run_timeout", durationSetting(func(o *Options) *time.Duration { return &o.DefaultTimeout })},
	{"max_run_timeout", durationSetting(func(o *Options) *time.Duration { return &o.MaxTimeout })},
	{"max_nodes", intSetting(func(o *Options) *int { return &o.MaxNodes })},
	{"max_fan_out", intSetting(func(o *Options) *int { return &o.MaxFanOut })},
	{"max_steps", intSetting(func(o *Options) *int { return &o.MaxSteps })},
	{"max_node_output_bytes", intSetting(func(o *Options) *int { return &o.MaxOutputBytes })},
	{"max_run_bytes", intSetting(func(o *Options) *int { return &o.MaxRunBytes })},
	{"max_stored_runs", intSetting(func(o *Options) *int { return &o.MaxStoredRuns })},
	{"max_run_age", durationSetting(func(o *Options) *time.Duration { return &o.MaxRunAge })},
	{"max_store_bytes", func(o *Options, v any) error {
		n, err := positiveInt(v)
		o.MaxStoreBytes = int64(n)
		return err
	}},
	{"files_root", folderSetting(func(o *Options) *string { return &o.FilesRoot })},
	{"diagrams_root", folderSetting(func(o *Options) *string { return &o.DiagramsRoot })},
}

// SettingNames lists the keys [ApplySettings] knows, in documentation
// order.
func SettingNames() []string {
	names := make([]string, len(settings))
	for i, s := range settings {
		names[i] = s.key
	}
	return names
}

// ApplySettings sets o's fields from the pack's settings in the config
// file: keys such as max_run_bytes and http_allow_hosts (see
// docs/diagrams.md). path is where the settings are in the file, for
// errors such as "packs.diagram.settings.max_nodes: must be a whole
// number above zero, not "lots"". Unknown keys are errors.
func ApplySettings(o *Options, path string, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := slices.IndexFunc(settings, func(s setting) bool { return s.key == k })
		if i < 0 {
			return fmt.Errorf("%s.%s: unknown setting (known: %s)", path, k, strings.Join(SettingNames(), ", "))
		}
		if err := settings[i].apply(o, m[k]); err != nil {
			sep := ": "
			if strings.HasPrefix(err.Error(), "[") {
				sep = ""
			}
			return fmt.Errorf("%s.%s%s%v", path, k, sep, err)
		}
	}
	return nil
}

func intSetting(field func(*Options) *int) func(*Options, any) error {
	return func(o *Options, v any) error {
		n, err := positiveInt(v)
		*field(o) = n
		return err
	}
}

func folderSetting(field func(*Options) *string) func(*Options, any) error {
	return func(o *Options, v any) error {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return fmt.Errorf("must be a folder, not %s", show(v))
		}
		*field(o) = s
		return nil
	}
}

func durationSetting(field func(*Options) *time.Duration) func(*Options, any) error {
	return func(o *Options, v any) error {
		s, ok := v.(string)
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if !ok || err != nil || d <= 0 {
			return fmt.Errorf("must be a duration above zero such as 90s, 5m or 720h, not %s", show(v))
		}
		*field(o) = d
		return nil
	}
}

// positiveInt reads a whole number above zero: an integer, or a string of
// digits (what ${VAR} expands to).
func positiveInt(v any) (int, error) {
	var n int64
	ok := false
	switch x := v.(type) {
	case int64:
		n, ok = x, true
	case int:
		n, ok = int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			n, ok = int64(x), true
		}
	case string:
		var err error
		n, err = strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		ok = err == nil
	}
	if !ok || n <= 0 || n > math.MaxInt {
		return 0, fmt.Errorf("must be a whole number above zero, not %s", show(v))
	}
	return int(n), nil
}

func boolValue(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("must be true or false, not %s", show(v))
}

func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be a list of strings, not %s", show(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("[%d]: must be a string, not %s", i, show(e))
		}
		out[i] = s
	}
	return out, nil
}

func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%v (%T)", v, v)
}
