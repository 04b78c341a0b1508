package toolsearch

import (
	"reflect"
	"testing"
)

func TestIsPlural(t *testing.T) {
	t.Parallel()
	for w, want := range map[string]bool{
		"issues": true, "entries": true, "users": true, "files": true,
		"issue": false, "status": false, "analysis": false, "class": false, "gas": false, "s3": false,
	} {
		if got := isPlural(w); got != want {
			t.Errorf("isPlural(%q) = %v, want %v", w, got, want)
		}
	}
}

func TestToolIntent(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]nameIntent{
		"list_issues":        {act: actRead, many: true, nouns: []nameNoun{{"issu", true}}},
		"get_issue":          {act: actRead, nouns: []nameNoun{{"issu", false}}},
		"createPullRequest":  {act: actCreate, nouns: []nameNoun{{"pull", false}, {"request", false}, {"createpullrequest", false}}},
		"customer_delete":    {act: actDelete, nouns: []nameNoun{{"custom", false}}},
		"weather":            {nouns: []nameNoun{{"weather", false}}},
		"unban_user":         {act: actDelete, nouns: []nameNoun{{"user", false}}},
		"unique_values":      {nouns: []nameNoun{{"uniqu", false}, {"valu", true}}},
		"insert-many":        {act: actCreate, many: true, said: true},
		"update-one":         {act: actUpdate, said: true},
		"batch_update_cells": {act: actUpdate, many: true, said: true, nouns: []nameNoun{{"cell", true}}},
	} {
		if got := toolIntent(name, ""); !reflect.DeepEqual(got, want) {
			t.Errorf("toolIntent(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestIntentOf(t *testing.T) {
	t.Parallel()
	in := intentOf(`Please fetch the issues labelled "bugs" and the milestone`)
	if in.act != actRead {
		t.Errorf("act = %v, want %v (read)", in.act, actRead)
	}
	for term, want := range map[string]uint8{"issu": numPlural, "mileston": numSingular, "bug": 0} {
		if got := in.num[term]; got != want {
			t.Errorf("num[%q] = %v, want %v (all: %v)", term, got, want, in.num)
		}
	}
	// The verb is looked for only near the start of the request.
	if in := intentOf("the report for the team about the quarter budget plans should delete nothing"); in.act != actNone {
		t.Errorf("a late verb gave act %v", in.act)
	}
}

// TestToolIntentFromDescription: a name without a verb takes its action
// from its description's opening verb; a name with one keeps its own.
func TestToolIntentFromDescription(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, description string
		want              action
	}{
		{"atlas-connect-cluster", "Lists MongoDB Atlas clusters", actRead},
		{"place_details", "Retrieves the details of a place.", actRead},
		{"payment_methods", "The payment methods of the account.", actNone},
		{"weather", "", actNone},
		{"delete_issue", "Gets nothing back: deletes an issue.", actDelete},
		{"unpin_message", "Pins nothing; unpins a message.", actDelete},
	} {
		if got := toolIntent(c.name, c.description).act; got != c.want {
			t.Errorf("toolIntent(%q, %q).act = %v, want %v", c.name, c.description, got, c.want)
		}
	}
}

// TestIntentCount: a name that says how many items it acts on, and none
// of whose nouns the request holds, gains when the request writes
// something in the plural and it acts on many, or nothing and it acts on
// one, and loses otherwise.
func TestIntentCount(t *testing.T) {
	t.Parallel()
	p := &scoring{verb: 1, plural: 1}
	many, one := toolIntent("insert-many", ""), toolIntent("insert-one", "")
	records, record := intentOf("Insert 50 customer records into the collection"), intentOf("Insert a customer record into the collection")
	for _, c := range []struct {
		what string
		q    queryIntent
		d    nameIntent
		want float64
	}{
		{"many for records", records, many, 2},
		{"one for records", records, one, 0},
		{"many for a record", record, many, 0},
		{"one for a record", record, one, 2},
	} {
		if got := intentScore(&c.q, &c.d, p); got != c.want {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}

func TestIsUndo(t *testing.T) {
	t.Parallel()
	for w, want := range map[string]bool{
		"unban": true, "unpublish": true, "unarchive": true, "unmute": true, "unpin": true,
		"unique": false, "union": false, "unit": false, "universal": false, "understand": false, "under": false, "until": false, "un": false,
	} {
		if got := isUndo(w); got != want {
			t.Errorf("isUndo(%q) = %v, want %v", w, got, want)
		}
	}
}

func TestIntentScore(t *testing.T) {
	t.Parallel()
	p := &scoring{verb: 1, plural: 1}
	q := intentOf("delete the issues")
	for name, want := range map[string]float64{
		"delete_issues":   2,  // same verb class, same number
		"remove_issue":    0,  // same verb class, other number
		"list_issue":      0,  // other verb class; a listing name is plural
		"create_issue":    -2, // other verb class, other number
		"weather_station": 0,  // no verb, no noun in common
	} {
		d := toolIntent(name, "")
		if got := intentScore(&q, &d, p); got != want {
			t.Errorf("intentScore(%q, %q) = %v, want %v", "delete the issues", name, got, want)
		}
	}
}

// TestIntentRanking checks that the request's verb and number choose
// among tools of one server that share most of their words.
func TestIntentRanking(t *testing.T) {
	t.Parallel()
	x := New()
	x.SetSource(Source{Name: "tracker"}, []Tool{
		{Name: "get_ticket", Description: "Get a ticket of the tracker by its number, with its comments."},
		{Name: "list_tickets", Description: "List the tickets of the tracker, with their comments."},
		{Name: "create_ticket", Description: "Create a ticket in the tracker, with comments."},
		{Name: "delete_ticket", Description: "Delete a ticket from the tracker, with its comments."},
	})
	for q, want := range map[string]string{
		"retrieve ticket 42 and its comments": "get_ticket",
		"the open tickets and their comments": "list_tickets",
		"erase ticket 42 from the tracker":    "delete_ticket",
		"add a ticket with comments":          "create_ticket",
	} {
		r := mustSearch(t, x, q, SearchOptions{Limit: 4})
		if len(r.Hits) == 0 || r.Hits[0].Name != want {
			t.Errorf("%q: got %v, want %s first", q, names(r), want)
		}
	}
}

// TestUndoRanking checks that a request to take something back finds the
// tool whose verb undoes it, whether the request says "unpin" or
// "remove the pin", and that a request for the thing itself does not.
func TestUndoRanking(t *testing.T) {
	t.Parallel()
	x := New()
	x.SetSource(Source{Name: "chat"}, []Tool{
		{Name: "pin_message", Description: "Pin a message in a chat."},
		{Name: "unpin_message", Description: "Unpin a message in a chat."},
		{Name: "ban_user", Description: "Ban a user from a chat."},
		{Name: "unban_user", Description: "Unban a user from a chat."},
	})
	for q, want := range map[string]string{
		"unpin the message about the release":   "unpin_message",
		"remove the ban on user 42 in the chat": "unban_user",
		"pin the message about the release":     "pin_message",
		"ban user 42 from the chat":             "ban_user",
	} {
		r := mustSearch(t, x, q, SearchOptions{Limit: 4})
		if len(r.Hits) == 0 || r.Hits[0].Name != want {
			t.Errorf("%q: got %v, want %s first", q, names(r), want)
		}
	}
}
