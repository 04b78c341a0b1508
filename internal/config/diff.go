package config

import "reflect"

// Delta is what changed between two configs, so that a reload restarts
// only what it must. Disabled sources count as absent: disabling a server
// removes it, enabling one adds it. So do quarantined servers: putting a
// server in quarantine removes it, approving it (quarantine gone) adds it.
type Delta struct {
	Servers SourceDelta
	Plugins SourceDelta
	Packs   SourceDelta
	// Sections lists the other top-level sections that differ, from
	// "presets", "profiles", "discovery", "http", "lock", "log", "audit", "startup_budget" and "store".
	Sections []string
}

// SourceDelta sorts the sources of one kind by what a reload does to
// them. Each list is sorted by name.
type SourceDelta struct {
	// Added sources are new (start them).
	Added []string
	// Removed sources are gone (stop them).
	Removed []string
	// Changed sources differ in how they are reached: command, args, env,
	// cwd, url, headers, token, transport, pack settings. Restart them.
	Changed []string
	// Updated sources differ only in how the hub serves them: prefix, tool
	// filter, timeouts, drift policy. Re-apply those settings and keep the
	// running connection and its session.
	Updated []string
	// Unchanged sources are identical; keep them as they are.
	Unchanged []string
}

// Empty reports whether nothing changed.
func (d *Delta) Empty() bool {
	return len(d.Sections) == 0 && d.Servers.quiet() && d.Plugins.quiet() && d.Packs.quiet()
}

func (s *SourceDelta) quiet() bool {
	return len(s.Added) == 0 && len(s.Removed) == 0 && len(s.Changed) == 0 && len(s.Updated) == 0
}

// Diff compares the config in force (old, which may be nil) with a new one.
func Diff(old, new *Config) Delta {
	if old == nil {
		old = &Config{}
	}
	if new == nil {
		new = &Config{}
	}
	var d Delta
	d.Servers = diffSources(old.Servers, new.Servers,
		(*Server).Serves,
		func(s *Server) Source { return s.Source },
		func(s *Server) any { c := *s; c.Source, c.Registry = Source{}, nil; return normalize(c) })
	d.Plugins = diffSources(old.Plugins, new.Plugins,
		func(p *Plugin) bool { return !p.Disabled },
		func(p *Plugin) Source { return p.Source },
		func(p *Plugin) any { c := *p; c.Source = Source{}; return normalize(c) })
	d.Packs = diffSources(old.Packs, new.Packs,
		func(p *Pack) bool { return !p.Disabled },
		func(p *Pack) Source { return p.Source },
		func(p *Pack) any { return normalize(p.Settings) })
	if (old.Packs == nil) != (new.Packs == nil) && len(d.Packs.Added)+len(d.Packs.Removed) == 0 {
		// "packs:" appeared or went away: the daemon's default packs
		// switch on or off.
		d.Sections = append(d.Sections, "packs")
	}
	for _, s := range []struct {
		name     string
		old, new any
	}{
		{"presets", old.Presets, new.Presets},
		{"profiles", old.Profiles, new.Profiles},
		{"discovery", old.Discovery, new.Discovery},
		{"http", old.HTTP, new.HTTP},
		{"lock", old.Lock, new.Lock},
		{"log", old.Log, new.Log},
		{"audit", old.Audit, new.Audit},
		{"startup_budget", old.StartupBudget, new.StartupBudget},
		{"store", old.Store, new.Store},
	} {
		if !reflect.DeepEqual(normalize(s.old), normalize(s.new)) {
			d.Sections = append(d.Sections, s.name)
		}
	}
	return d
}

func diffSources[T any](old, new map[string]*T, active func(*T) bool, source func(*T) Source, reach func(*T) any) SourceDelta {
	enabled := func(m map[string]*T) map[string]*T {
		out := make(map[string]*T, len(m))
		for k, v := range m {
			if active(v) {
				out[k] = v
			}
		}
		return out
	}
	o, n := enabled(old), enabled(new)
	var d SourceDelta
	for _, name := range sortedKeys(n) {
		ov, ok := o[name]
		switch {
		case !ok:
			d.Added = append(d.Added, name)
		case !reflect.DeepEqual(reach(ov), reach(n[name])):
			d.Changed = append(d.Changed, name)
		case !reflect.DeepEqual(normalize(source(ov)), normalize(source(n[name]))):
			d.Updated = append(d.Updated, name)
		default:
			d.Unchanged = append(d.Unchanged, name)
		}
	}
	for _, name := range sortedKeys(o) {
		if _, ok := n[name]; !ok {
			d.Removed = append(d.Removed, name)
		}
	}
	return d
}

// normalize returns a copy of v in which empty slices and maps are nil, so
// that "args: []" and no args compare equal.
func normalize(v any) any {
	if v == nil {
		return nil
	}
	return normalizeValue(reflect.ValueOf(v)).Interface()
}

func normalizeValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(normalizeValue(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(normalizeValue(v.Elem()))
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(normalizeValue(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(iter.Key(), normalizeValue(iter.Value()))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(normalizeValue(v.Field(i)))
			}
		}
		return out
	}
	return v
}
