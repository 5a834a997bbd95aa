"""Calibration text for GPTQ and AWQ (lesson 09): thousands of tokens, written for this course.

GPTQ's Hessian ``2 x.T @ x / tokens`` has one row per input feature, up to 1536 in MiniLM;
it is invertible only with at least that many tokens (and GPTQ keeps improving with more).
The paragraphs below are on everyday topics, none about quantization, and none shared
with the evaluation sentences of lesson 03 (:data:`qlesson.teach.models.SENTENCES`) or the
calibration sentences of lesson 05, so lesson 09 can calibrate on one text and measure on
another. :func:`calibration_texts` returns them in a fixed order; the first ``n`` are a
smaller calibration set.

>>> texts = calibration_texts()
>>> len(texts), texts[0][:34]
(48, 'The harbour wakes before the town.')
>>> len(calibration_texts(5))
5
"""

from __future__ import annotations

from qlesson.quant._checks import check_whole

PARAGRAPHS = (
    "The harbour wakes before the town. Fishing boats come in at first light, gulls circle the "
    "cranes, and the market porters stack crates of ice along the quay. By seven the cafes open "
    "their shutters and the smell of coffee drifts over the water.",
    "To repot a cactus, wear thick gloves or fold a newspaper into a strap around the stem. "
    "Choose a pot only slightly wider than the old one, fill it with gritty soil, and wait a week "
    "before watering so that any broken roots can heal.",
    "The old railway line was turned into a cycling path last spring. It runs for forty "
    "kilometres through orchards and small villages, crosses the river twice on iron bridges, "
    "and ends at a station that now serves lemonade instead of tickets.",
    "Our team meets every Monday to plan the week. Each person names one task they will finish "
    "and one thing that blocks them. The meeting lasts fifteen minutes, and anyone who talks "
    "for longer has to buy biscuits for everyone on Friday.",
    "Bees communicate the direction of flowers with a dance. A forager walks in a figure of eight "
    "on the comb, waggling her body along the middle line; the angle of that line to the vertical "
    "matches the angle between the food and the sun.",
    "The recipe for the soup is simple. Soften an onion in butter, add chopped carrots, a potato "
    "and a litre of stock, and simmer for twenty minutes. Blend until smooth, season with salt, "
    "pepper and a little nutmeg, and serve with warm bread.",
    "When the power failed, the hospital switched to its generators within seconds. The lights "
    "flickered once, the monitors kept beeping, and the surgeons in theatre three did not even "
    "look up from their work.",
    "Learning a language as an adult is slow but rewarding. Reading children's books helps, "
    "because the sentences are short and the pictures explain the words. Speaking with "
    "neighbours, even badly, helps far more than any app.",
    "The glacier has retreated almost two kilometres in a century. Photographs from 1920 show "
    "ice filling the whole valley; today a grey lake sits where the tongue of the glacier used "
    "to end, and young pine trees grow on the old moraine.",
    "Chess players spend years studying openings, yet most games are decided by simple "
    "mistakes in the middle. A knight left without protection or a pawn pushed too early can "
    "undo an hour of careful play in a single move.",
    "The library's reading room has a domed ceiling painted with stars. Students come early to "
    "claim the desks by the windows, and the librarians enforce silence with a look rather than "
    "a word.",
    "A good bicycle lock is heavier than most people expect. Thieves carry bolt cutters and "
    "small jacks, so a thin cable stops only the casual ones. Lock the frame and the back wheel "
    "to something solid, and take the lights with you.",
    "In the desert the temperature can fall by thirty degrees after sunset. Travellers who "
    "sweated at noon pull on wool jumpers by midnight, and the sand that burned their feet in the "
    "afternoon is cold to the touch before dawn.",
    "The choir rehearses on Thursday evenings in the church hall. The sopranos sit by the piano, "
    "the basses lean against the radiators, and the conductor taps her pencil on the music "
    "stand whenever the tenors rush the tempo.",
    "Tides are caused mostly by the moon. Its gravity pulls the ocean into two bulges, one facing "
    "the moon and one on the far side of the earth, and as the planet turns each coast passes "
    "through both bulges roughly every day.",
    "The museum's new exhibition shows everyday objects from Roman households: oil lamps, bone "
    "combs, dice, a child's sandal and a bronze key. Visitors linger longest at a loaf of bread "
    "that was baked almost two thousand years ago.",
    "Before a long hike, check the weather, tell someone your route and pack more water than "
    "you think you need. Blisters start as hot spots, so stop and tape them early instead of "
    "hoping they will go away.",
    "The town council voted to plant a hundred trees along the main road. Shopkeepers worried "
    "about parking, but after two summers the shade has brought more people to walk, sit and "
    "buy ice cream than the lost spaces ever did.",
    "Owls hunt mostly by sound. Their faces work like dishes that gather noise toward the ears, "
    "and one ear sits higher than the other, so an owl can locate a mouse under snow from the "
    "difference in timing between its two ears.",
    "Moving house takes longer than anyone plans for. The boxes labelled kitchen somehow "
    "contain books, the kettle is always packed last and found first, and the sofa never fits "
    "through the door it came in by.",
    "The volcano last erupted in the eighteenth century, but scientists still watch it closely. "
    "Sensors on its slopes measure tiny earthquakes and changes in the ground, and a rise of a "
    "few centimetres would trigger a warning.",
    "A sourdough starter is a colony of wild yeast and bacteria living in flour and water. Fed "
    "every day, it bubbles and smells pleasantly sour; neglected, it grows a grey liquid on top "
    "that most bakers simply pour away.",
    "The marathon route follows the river, crosses the old bridge and finishes in the square "
    "in front of the cathedral. Volunteers hand out water every five kilometres, and a brass "
    "band plays at the hardest climb.",
    "Our grandparents kept every letter they wrote to each other during the war. The paper is "
    "thin and yellow, the ink has faded to brown, and the censors cut out any word that "
    "might have named a place.",
    "Solar panels produce the most electricity at midday in summer, when the sun is high and "
    "the days are long. A battery in the garage stores the surplus so the house can run on "
    "sunshine through the evening.",
    "The village school has only two classrooms. Children of six and seven learn in one, older "
    "pupils in the other, and at lunchtime everyone eats together at long tables under the "
    "apple tree in the yard.",
    "Octopuses can change the colour and texture of their skin in a fraction of a second. "
    "They match rocks, sand and seaweed so well that divers swim past them without noticing, "
    "until an arm reaches out for a crab.",
    "The plumber arrived an hour late, apologised twice and fixed the leak in ten minutes. The "
    "problem was a worn washer worth a few cents; the call-out fee was considerably more.",
    "Night trains are coming back across the continent. Passengers board after dinner, sleep "
    "in narrow bunks to the rhythm of the rails, and wake to breakfast in a city six hundred "
    "kilometres away.",
    "The painter mixed her greens from blue and yellow rather than using the tube colours. She "
    "said that a landscape painted with one green looks flat, while mixed greens keep the "
    "small differences of light that the eye expects.",
    "Earthquake-resistant buildings are designed to sway rather than crack. Some rest on "
    "rubber bearings that isolate them from the ground; others hold heavy pendulums near the "
    "top that swing against the motion of the tower.",
    "At the allotment the tomatoes ripened all at once. We made sauce, gave bags away to "
    "neighbours, and still lined every windowsill with green fruit wrapped in newspaper to "
    "finish ripening indoors.",
    "The city's first underground line opened more than a century ago. Its tunnels were dug "
    "by hand just below the streets, which is why the trains on that line are smaller and the "
    "stations hotter than on the newer lines.",
    "Migrating birds navigate with several senses at once. They read the position of the sun "
    "and the stars, feel the earth's magnetic field, and recognise coastlines and rivers they "
    "have flown over before.",
    "The referee checked the video for almost three minutes before allowing the goal. Half of "
    "the stadium cheered, the other half whistled, and the away team's coach was sent to the "
    "stands for arguing too loudly.",
    "A compost heap needs a balance of green and brown material. Grass cuttings and vegetable "
    "peel bring nitrogen, while dry leaves, straw and cardboard bring carbon; turning the heap "
    "every few weeks lets in the air that keeps it from smelling.",
    "The lighthouse keeper's cottage is now a small guest house. Visitors climb the spiral "
    "stairs to the lamp room at sunset, and on clear nights they can count the beams of three "
    "other lighthouses along the coast.",
    "Writing a clear letter of complaint is a skill. State what happened, when and where, say "
    "what you would like done about it, and keep the tone polite; an angry letter is easy to "
    "ignore, a precise one is not.",
    "The rainforest canopy holds more species than the forest floor. Orchids grow on branches "
    "high above the ground, frogs lay eggs in pools of water caught in leaves, and some animals "
    "never come down at all.",
    "Every autumn the village holds a pumpkin contest. The winner last year weighed more than a "
    "small car and had to be lifted onto the scales with a tractor, while the children's prize "
    "went to a pumpkin carved like a cat.",
    "Glass is made by melting sand with soda and lime at very high temperatures. The glowing "
    "liquid can be blown, pressed or floated on molten tin to make the flat sheets that end up "
    "in windows.",
    "The astronomy club meets on the hill above the town whenever the sky is clear. Members "
    "bring telescopes, flasks of tea and red torches that do not spoil their night vision, and "
    "argue happily about which galaxy is which.",
    "Sheepdogs respond to whistles that carry much farther than a voice. A short rising note may "
    "mean go left, a falling one go right, and a long steady blast lie down; each shepherd's "
    "code is a little different.",
    "The bridge was closed for repairs for six months. Commuters took the ferry instead and "
    "many found they preferred it: twenty minutes on the water with a coffee beat forty "
    "minutes in traffic.",
    "Paper was invented in China and spread west along the trade routes over many centuries. "
    "Early European mills beat linen rags into pulp with water-powered hammers, and the rags "
    "were collected from door to door.",
    "The hotel's breakfast room overlooks the lake. Guests who come down early see the mist "
    "lift from the water and the first rowers glide past, while later risers find only toast "
    "and a crowded terrace.",
    "Caring for an old dog means slower walks and softer food. Ours sleeps most of the day, "
    "still wags his tail when the post arrives, and insists on inspecting every lamppost on "
    "the way to the park.",
    "The storm brought down power lines across three counties. Engineers worked through the "
    "night in wind and rain, and by the next evening most homes had electricity again, though "
    "a few farms waited almost a week.",
)


def calibration_texts(n: int | None = None) -> tuple[str, ...]:
    """The calibration paragraphs in a fixed order: all of them, or the first ``n``."""
    if n is None:
        return PARAGRAPHS
    n = check_whole(n, "n", 1, f"up to {len(PARAGRAPHS)} paragraphs")
    if n > len(PARAGRAPHS):
        raise ValueError(
            f"n={n} is more than the {len(PARAGRAPHS)} calibration paragraphs; pass n <= {len(PARAGRAPHS)}"
        )
    return PARAGRAPHS[:n]
